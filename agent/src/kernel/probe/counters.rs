//! The probe's counters (`STATS`, indexed by `lifeline_common::config::stats`), summed over
//! CPUs. Read by the daemon only, every sweep; the metrics get them from its summary.

use std::borrow::Borrow;

use anyhow::Result;
use aya::maps::{MapData, PerCpuArray};
use lifeline_common::config::stats;

pub(super) fn sum<T: Borrow<MapData>>(
    map: &PerCpuArray<T, u64>,
) -> Result<[u64; stats::LEN as usize]> {
    let mut out = [0u64; stats::LEN as usize];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = map.get(&u32::try_from(i)?, 0)?.iter().sum();
    }
    Ok(out)
}
