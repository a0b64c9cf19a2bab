//! The probe's counters (`STATS`, indexed by `lifeline_common::config::stats`), summed over
//! CPUs, also through a handle of their own for the metrics, which are served apart from
//! the daemon that owns the probe.

use std::{borrow::Borrow, os::fd::AsFd};

use anyhow::{Context as _, Result};
use aya::maps::{Map, MapData, PerCpuArray};
use lifeline_common::config::stats;

/// A duplicate of the `STATS` fd (not a reopening by id, which needs `CAP_SYS_ADMIN`):
/// scraping the metrics never waits for the daemon.
pub struct StatsReader(PerCpuArray<MapData, u64>);

impl StatsReader {
    pub(super) fn open(map: &Map) -> Result<Self> {
        let Map::PerCpuArray(data) = map else {
            anyhow::bail!("map STATS is not a per-CPU array");
        };
        let fd = data.fd().as_fd().try_clone_to_owned();
        let again = MapData::from_fd(fd.context("duplicating the STATS map's fd")?)?;
        Ok(Self(PerCpuArray::try_from(Map::PerCpuArray(again))?))
    }

    /// Every counter, summed over CPUs.
    ///
    /// # Errors
    /// When the map cannot be read.
    pub fn read(&self) -> Result<[u64; stats::LEN as usize]> {
        sum(&self.0)
    }
}

pub(super) fn sum<T: Borrow<MapData>>(
    map: &PerCpuArray<T, u64>,
) -> Result<[u64; stats::LEN as usize]> {
    let mut out = [0u64; stats::LEN as usize];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = map.get(&u32::try_from(i)?, 0)?.iter().sum();
    }
    Ok(out)
}
