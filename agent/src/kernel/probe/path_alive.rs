//! `PATH_ALIVE`: the endpoint's addresses, each with the last moment the agent found the
//! path to it working. The RTO callback keeps a socket's linear timeouts for a trouble
//! episode only once that moment is after the episode began (`agent-ebpf/src/linear.rs`):
//! the agent writes it when a peer probe is answered, when the guard's connection is
//! accepted, and when a socket to the address hears from it.

use std::net::SocketAddr;

use anyhow::{Context as _, Result};
use aya::maps::{HashMap, MapData};
use lifeline_common::{maps, watch::PeerKey};

use super::Probe;
use crate::judge::Mono;

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
        let mut map = self.path_alive_map()?;
        let key = PeerKey::from(peer);
        if map.get(&key, 0).is_ok() {
            return Ok(());
        }
        map.insert(key, 0, 0).context("PATH_ALIVE")
    }

    /// The path to `peer` worked at `at`; only a followed peer, and only a later moment, is
    /// written.
    pub(crate) fn path_alive(&mut self, peer: SocketAddr, at: Mono) {
        let ns = at.as_nanos();
        let Ok(mut map) = self.path_alive_map() else {
            return;
        };
        let key = PeerKey::from(peer);
        if map.get(&key, 0).is_ok_and(|old| old < ns) {
            let _ = map.insert(key, ns, 0);
        }
    }

    pub(crate) fn remove_path_peer(&mut self, peer: SocketAddr) {
        if let Ok(mut map) = self.path_alive_map() {
            let _ = map.remove(&PeerKey::from(peer));
        }
    }
}
