//! The probe's counters (`STATS`, indexed by `lifeline_common::config::stats`), summed over
//! CPUs. Read by the daemon only, every sweep; the metrics get them from its summary.
//!
//! Every sweep reads them whole (the news a sweep takes and the counters it reads must be of
//! one moment: a kill can follow news the counter already counted), so the read is one
//! `BPF_MAP_LOOKUP_BATCH` (5.6) for all of them, where aya makes one syscall per counter:
//! on the usual load's 6-11 sweeps a second, 9 syscalls each were the agent's largest
//! single cost (`cargo xtask bench --usual`). A kernel without the call gets aya's reads.

use std::{
    borrow::Borrow,
    os::fd::{AsFd as _, AsRawFd as _},
};

use anyhow::Result;
use aya::maps::{IterableMap, MapData, PerCpuArray};
use lifeline_common::config::stats;

use super::batch::{BatchAttr, lookup_batch};

const LEN: usize = stats::LEN as usize;

pub(super) fn sum<T: Borrow<MapData>>(map: &PerCpuArray<T, u64>) -> Result<[u64; LEN]> {
    if let Some(out) = batched(IterableMap::map(map)) {
        return Ok(out);
    }
    let mut out = [0u64; LEN];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = map.get(&u32::try_from(i)?, 0)?.iter().sum();
    }
    Ok(out)
}

/// Every counter in one call, or `None` when the call failed or came back short.
fn batched(map: &MapData) -> Option<[u64; LEN]> {
    let cpus = aya::util::nr_cpus().ok()?;
    let fd = u32::try_from(map.fd().as_fd().as_raw_fd()).ok()?;
    let mut keys = [0u32; LEN];
    // A per-CPU value is `round_up(value_size, 8)` bytes per possible CPU, key after key
    // (`bpf_percpu_array_copy()`,
    // <https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/arraymap.c>): a u64 is 8.
    let mut values = vec![0u64; LEN * cpus];
    let mut next = 0u64;
    let mut attr = BatchAttr {
        out_batch: (&raw mut next) as u64,
        keys: keys.as_mut_ptr() as u64,
        values: values.as_mut_ptr() as u64,
        count: stats::LEN,
        map_fd: fd,
        ..BatchAttr::default()
    };
    // SAFETY: the attr points at `LEN` keys, `LEN` per-CPU values of the map's size and a
    // token, all alive for the call.
    let errno = unsafe { lookup_batch(&mut attr) };
    // All `LEN` in one call: no error, or `ENOENT` with the last ones (the array's end).
    let ended = errno.is_none_or(|e| e == libc::ENOENT);
    if !ended || attr.count != stats::LEN {
        return None;
    }
    let mut out = [0u64; LEN];
    for (k, per_cpu) in keys.iter().zip(values.chunks_exact(cpus)) {
        *out.get_mut(*k as usize)? = per_cpu.iter().sum();
    }
    Some(out)
}
