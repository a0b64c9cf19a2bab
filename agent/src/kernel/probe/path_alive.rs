//! `PATH_ALIVE`: the endpoint's addresses, each with the last moment the agent found the
//! path to it working. The RTO callback keeps a socket's linear timeouts for a trouble
//! episode only once that moment is after the episode began (`agent-ebpf/src/linear.rs`):
//! the agent writes it when a peer probe is answered, when the guard's connection is
//! accepted, and when a socket to the address hears from it.
//!
//! The agent is the map's only writer (the program only reads it), so its own copy of what
//! it wrote (`Written`) is the map: a sweep that re-follows the same addresses and reads
//! sockets that heard from their peer makes no syscall unless a moment moves forward
//! (measured: 140 lookups a second, a fifth of the agent's syscalls, at a node's usual load).

use std::{collections::HashMap as StdHashMap, net::SocketAddr};

use anyhow::{Context as _, Result};
use aya::maps::{HashMap, MapData};
use lifeline_common::{maps, watch::PeerKey};

use super::Probe;
use crate::judge::Mono;

/// The followed addresses, each with the moment last written for it (0: none yet).
#[derive(Debug, Default)]
pub(super) struct Written(StdHashMap<SocketAddr, u64>);

impl Probe {
    fn path_alive_map(&mut self) -> Result<HashMap<&mut MapData, PeerKey, u64>> {
        Ok(HashMap::try_from(self.map_mut(maps::PATH_ALIVE)?)?)
    }

    /// Follow `peer`: its sockets' linear timeouts wait for the path to it to be found
    /// working in each trouble episode. Keeps a moment already written.
    ///
    /// # Errors
    /// When the map is full or cannot be written.
    pub(crate) fn add_path_peer(&mut self, peer: SocketAddr) -> Result<()> {
        if self.path_written.0.contains_key(&peer) {
            return Ok(());
        }
        self.path_alive_map()?
            .insert(PeerKey::from(peer), 0, 0)
            .context("PATH_ALIVE")?;
        self.path_written.0.insert(peer, 0);
        Ok(())
    }

    /// The path to `peer` worked at `at`; only a followed peer, and only a later moment, is
    /// written.
    pub(crate) fn path_alive(&mut self, peer: SocketAddr, at: Mono) {
        let ns = at.as_nanos();
        if self.path_written.0.get(&peer).is_none_or(|old| *old >= ns) {
            return;
        }
        let Ok(mut map) = self.path_alive_map() else {
            return;
        };
        if map.insert(PeerKey::from(peer), ns, 0).is_ok() {
            self.path_written.0.insert(peer, ns);
        }
    }

    pub(crate) fn remove_path_peer(&mut self, peer: SocketAddr) {
        self.path_written.0.remove(&peer);
        if let Ok(mut map) = self.path_alive_map() {
            let _ = map.remove(&PeerKey::from(peer));
        }
    }
}
