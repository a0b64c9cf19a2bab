//! Changes to the probe's state after load: marking an adopted socket that nothing could
//! arm, and `check`'s own loopback target.

use std::net::SocketAddr;

use anyhow::{Context as _, Result};
use aya::maps::{HashMap, MapData};
use lifeline_common::{SockState, maps, watch::WATCH_ENDPOINT};

use super::Probe;
use crate::{
    judge::{Cookie, Record},
    kernel::record::decode,
};

impl Probe {
    /// One record, decoded; `None` when the socket closed (its record is gone).
    ///
    /// # Errors
    /// When the map cannot be read.
    pub(crate) fn get(&self, cookie: Cookie) -> Result<Option<Record>> {
        let map: HashMap<&MapData, u64, SockState> = HashMap::try_from(self.map(maps::SOCKETS)?)?;
        match map.get(&cookie.0, 0) {
            Ok(rec) => Ok(Some(decode(&rec))),
            Err(aya::maps::MapError::KeyNotFound) => Ok(None),
            Err(e) => Err(e).context("reading a SOCKETS record"),
        }
    }

    /// Record why an adopted socket is polled, when the iterator could not even say so
    /// itself (it failed to run). Left alone when the record is gone.
    pub(crate) fn set_adopt(&mut self, cookie: u64, adopt: i32, ka_result: i32) {
        if let Ok(m) = self.map_mut(maps::SOCKETS)
            && let Ok(mut map) = HashMap::<&mut MapData, u64, SockState>::try_from(m)
            && let Ok(mut rec) = map.get(&cookie, 0)
        {
            rec.adopt = adopt;
            rec.ka_result = ka_result;
            // BPF_EXIST: never re-create a record the socket's close removed meanwhile.
            let _ = map.insert(cookie, rec, 2);
        }
    }

    /// Watch `port` from now on (the connect hooks and `sock_ops` select by port first): a
    /// port the endpoint came to use after start.
    ///
    /// # Errors
    /// When the map cannot be written (full: it holds `--ports` and these).
    pub(crate) fn watch_port(&mut self, port: u16) -> Result<()> {
        let mut ports: HashMap<&mut MapData, u16, u8> =
            HashMap::try_from(self.map_mut(maps::PORTS)?)?;
        ports.insert(port, 1, 0).context("PORTS")
    }

    /// Make every socket connecting to `peer` from this namespace a target (as an endpoint
    /// client would be), so `check` can watch a loopback connection of its own exactly as
    /// `run` watches kubelet's: connect hook, then `sock_ops` at ESTABLISHED.
    ///
    /// # Errors
    /// When a map cannot be written.
    pub(crate) fn watch_peer_for_check(&mut self, peer: SocketAddr) -> Result<()> {
        let mut ports: HashMap<&mut MapData, u16, u8> =
            HashMap::try_from(self.map_mut(maps::PORTS)?)?;
        ports.insert(peer.port(), 1, 0).context("PORTS")?;
        self.add_endpoint_peer(peer)?;
        self.update_config(|c| c.flags |= WATCH_ENDPOINT).map(drop)
    }
}
