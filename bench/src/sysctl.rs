//! A host sysctl set for as long as a part of the bench needs it, then put back as it was
//! (also when the part fails: the guard's drop).

use anyhow::{Context, Result};

pub(crate) struct Sysctl {
    path: &'static str,
    before: String,
}

impl Sysctl {
    /// Sets `path` (under `/proc/sys`) to `value`, remembering the old value.
    pub(crate) fn set(path: &'static str, value: &str) -> Result<Self> {
        let before = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
        std::fs::write(path, value).with_context(|| format!("writing {value} to {path}"))?;
        Ok(Self {
            path,
            before: before.trim().to_owned(),
        })
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path, &self.before);
    }
}

/// The per-CPU input queue of the lab's host (`net.core.netdev_max_backlog`, one value for
/// every namespace: `net_core_table` is registered for the initial namespace only,
/// <https://github.com/torvalds/linux/blob/v6.18/net/core/sysctl_net_core.c>) deep enough for
/// `packets` at once, for as long as the guard lives.
///
/// Why: between two namespaces of one host, every keepalive probe and its answer is queued
/// there (`veth_xmit()` -> `netif_rx()` -> `enqueue_to_backlog()`). The kernel fires timers
/// that expire close together in one batch (the timer wheel's buckets are 8 jiffies wide
/// for a 1 s timer at `HZ=250`: <https://github.com/torvalds/linux/blob/v6.18/kernel/time/timer.c>),
/// so 100,000 idle sockets probed every second send about 3,000 probes in one softirq, three
/// times the default depth of 1000: most were dropped, their sockets saw a probe unanswered,
/// and the agent measured its answer to a loss the lab made. On a node the probes leave
/// through a NIC's queue and the answers come in through NAPI, neither through this queue.
pub(crate) fn backlog_for(packets: usize) -> Result<Backlog> {
    const PATH: &str = "/proc/sys/net/core/netdev_max_backlog";
    let now: usize = std::fs::read_to_string(PATH)
        .with_context(|| format!("reading {PATH}"))?
        .trim()
        .parse()
        .with_context(|| format!("{PATH} is not a number"))?;
    if now >= packets {
        return Ok(Backlog {
            depth: now,
            _guard: None,
        });
    }
    Ok(Backlog {
        depth: packets,
        _guard: Some(Sysctl::set(PATH, &packets.to_string())?),
    })
}

/// The input queue's depth while this lives.
pub(crate) struct Backlog {
    pub depth: usize,
    _guard: Option<Sysctl>,
}
