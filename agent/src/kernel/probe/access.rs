//! Reading and writing the loaded probe's maps: its records, counters, news and logs, and
//! the iterator run that arms sockets older than the agent.

use std::collections::HashMap as StdHashMap;

use anyhow::{Context as _, Result};
use aya::maps::{HashMap, MapData, PerCpuArray, RingBuf};
use lifeline_common::{SockState, config::stats, maps, sock::ADOPT_PENDING};

use super::{Probe, batch, counters};
use crate::{
    judge::{Cookie, Record},
    kernel::record::decode,
};

impl Probe {
    /// Hand the probe's log ring buffer to a task that forwards it into `tracing`.
    ///
    /// # Errors
    /// When the object has no log map.
    pub(crate) fn take_logger(&mut self) -> Result<aya_log::EbpfLogger<&'static dyn log::Log>> {
        aya_log::EbpfLogger::init(&mut self.ebpf).context("cannot start the probe's log reader")
    }

    /// The ring buffer of news about watched sockets (`lifeline_common::news`), for the
    /// agent to wait on.
    ///
    /// # Errors
    /// When the object has no such map.
    pub(crate) fn take_news(&mut self) -> Result<RingBuf<MapData>> {
        let map = self
            .ebpf
            .take_map(maps::NEWS)
            .context("map NEWS missing from the eBPF object")?;
        Ok(RingBuf::try_from(map)?)
    }

    /// Every record in `SOCKETS`, decoded.
    ///
    /// # Errors
    /// When the map cannot be read.
    pub(crate) fn sockets(&self) -> Result<Vec<(Cookie, Record)>> {
        let found = self.map(maps::SOCKETS)?;
        let raw = match found {
            aya::maps::Map::HashMap(data) => {
                let max = data.info().map_or(0, |i| i.max_entries());
                batch::lookup_all(data, max).ok()
            }
            _ => None,
        };
        let raw = if let Some(all) = raw {
            all
        } else {
            let map: HashMap<&MapData, u64, SockState> = HashMap::try_from(found)?;
            // A record removed between key and value lookups is skipped, not an error.
            map.iter().filter_map(Result::ok).collect()
        };
        Ok(raw.iter().map(|(c, s)| (Cookie(*c), decode(s))).collect())
    }

    /// Counters summed over CPUs, indexed by `lifeline_common::config::stats`.
    ///
    /// # Errors
    /// When the map cannot be read.
    pub(crate) fn stats(&self) -> Result<[u64; stats::LEN as usize]> {
        let map: PerCpuArray<&MapData, u64> = PerCpuArray::try_from(self.map(maps::STATS)?)?;
        counters::sum(&map)
    }

    /// Arm `sock_ops` callbacks on pre-existing sockets through the TCP iterator.
    /// Returns, per cookie, 0 when armed or the negative errno `bpf_setsockopt` gave.
    ///
    /// # Errors
    /// When the iterator cannot run.
    pub(crate) fn adopt(&mut self, cookies: &[u64]) -> Result<StdHashMap<u64, i32>> {
        {
            let mut adopt: HashMap<&mut MapData, u64, i32> =
                HashMap::try_from(self.map_mut(maps::ADOPT)?)?;
            for c in cookies {
                adopt.insert(c, ADOPT_PENDING, 0)?;
            }
        }
        super::keepalive_fn::run_iterator(&mut self.ebpf)?;
        let adopt: HashMap<&MapData, u64, i32> = HashMap::try_from(self.map(maps::ADOPT)?)?;
        Ok(cookies
            .iter()
            .filter_map(|c| adopt.get(c, 0).ok().map(|v| (*c, v)))
            .collect())
    }

    pub(super) fn map(&self, name: &str) -> Result<&aya::maps::Map> {
        self.ebpf
            .map(name)
            .with_context(|| format!("map {name} missing from the eBPF object"))
    }

    pub(super) fn map_mut(&mut self, name: &str) -> Result<&mut aya::maps::Map> {
        self.ebpf
            .map_mut(name)
            .with_context(|| format!("map {name} missing from the eBPF object"))
    }
}
