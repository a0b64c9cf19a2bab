//! The probe's watch-model maps, as the agent keeps them: target cgroup ids, endpoint
//! peers, and the namespace calibration in `CONFIG`.

use std::net::SocketAddr;

use anyhow::{Context as _, Result};
use aya::maps::{Array, HashMap, MapData};
use lifeline_common::{
    maps,
    watch::{PeerKey, WatchConfig},
};

use super::Probe;

impl Probe {
    /// Every `(cgroup id, target index)` the kernel side watches now.
    ///
    /// # Errors
    /// When the map cannot be read.
    pub(crate) fn target_cgroups(&self) -> Result<Vec<(u64, u32)>> {
        let map: HashMap<&MapData, u64, u32> = HashMap::try_from(self.map(maps::TARGET_CGROUPS)?)?;
        Ok(map.iter().filter_map(Result::ok).collect())
    }

    #[must_use]
    pub(crate) fn has_target_cgroup(&self, id: u64) -> bool {
        self.map(maps::TARGET_CGROUPS)
            .ok()
            .and_then(|m| HashMap::<&MapData, u64, u32>::try_from(m).ok())
            .is_some_and(|m| m.get(&id, 0).is_ok())
    }

    /// # Errors
    /// When the map is full or cannot be written.
    pub(crate) fn set_target_cgroup(&mut self, id: u64, index: u32) -> Result<()> {
        let mut map: HashMap<&mut MapData, u64, u32> =
            HashMap::try_from(self.map_mut(maps::TARGET_CGROUPS)?)?;
        map.insert(id, index, 0).context("TARGET_CGROUPS")
    }

    pub(crate) fn remove_target_cgroup(&mut self, id: u64) {
        if let Ok(m) = self.map_mut(maps::TARGET_CGROUPS)
            && let Ok(mut map) = HashMap::<&mut MapData, u64, u32>::try_from(m)
        {
            let _ = map.remove(&id);
        }
    }

    /// # Errors
    /// When the map is full or cannot be written.
    pub(crate) fn add_endpoint_peer(&mut self, peer: SocketAddr) -> Result<()> {
        let mut map: HashMap<&mut MapData, PeerKey, u8> =
            HashMap::try_from(self.map_mut(maps::ENDPOINT_PEERS)?)?;
        map.insert(PeerKey::from(peer), 1, 0)
            .context("ENDPOINT_PEERS")
    }

    pub(crate) fn remove_endpoint_peer(&mut self, peer: SocketAddr) {
        if let Ok(m) = self.map_mut(maps::ENDPOINT_PEERS)
            && let Ok(mut map) = HashMap::<&mut MapData, PeerKey, u8>::try_from(m)
        {
            let _ = map.remove(&PeerKey::from(peer));
        }
    }

    /// Name the calibration socket (`crate::watch::netns`).
    ///
    /// # Errors
    /// When `CONFIG` cannot be written.
    pub(crate) fn begin_calibration(&mut self, cookie: u64) -> Result<()> {
        self.update_config(|c| {
            c.calibrate_cookie = cookie;
            c.netns_cookie = 0;
        })
        .map(drop)
    }

    /// The namespace cookie the hook wrote (0: it did not run); no socket is special after.
    ///
    /// # Errors
    /// When `CONFIG` cannot be read or written.
    pub(crate) fn end_calibration(&mut self) -> Result<u64> {
        self.update_config(|c| c.calibrate_cookie = 0)
            .map(|c| c.netns_cookie)
    }

    pub(super) fn update_config(
        &mut self,
        f: impl FnOnce(&mut WatchConfig),
    ) -> Result<WatchConfig> {
        let mut config: Array<&mut MapData, WatchConfig> =
            Array::try_from(self.map_mut(maps::CONFIG)?)?;
        let mut c = config.get(&0, 0)?;
        f(&mut c);
        config.set(0, c, 0)?;
        Ok(c)
    }
}
