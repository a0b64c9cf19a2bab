//! What the hostile-neighbour tests need besides the lab: a slow handshake (so a new
//! connection's owner entry waits in the kernel while a flood runs) and the agent's memory.

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::lab::Lab;
use crate::nft::Fault;

impl Lab {
    /// Drops every SYN (not SYN-ACK) to `server`: a connect started now completes only with
    /// the first SYN retransmitted after the fault is healed (`syn_hold`), and its handshake
    /// stays open that long.
    ///
    /// # Errors
    /// When nft refuses the rule.
    pub fn drop_syns(&self, server: Ipv4Addr) -> Result<Fault> {
        let server = server.to_string();
        self.fault(
            &format!("SYNs to {server} dropped"),
            &[&[
                "ip", "daddr", &server, "tcp", "flags", "&", "(syn", "|", "ack)", "==", "syn",
                "counter", "drop",
            ]],
        )
    }
}

/// How long to drop a new connection's SYNs so that its handshake stays open about 4 s
/// and still completes within the lab client's 5 s connect timeout: SYNs are retransmitted
/// every second for the first `net.ipv4.tcp_syn_linear_timeouts` (6.7 on, 4 by default),
/// else after 1, 3 and 7 s (`TCP_TIMEOUT_INIT` doubled; so about 3 s there).
#[must_use]
pub fn syn_hold() -> Duration {
    let linear = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_syn_linear_timeouts")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    if linear >= 4 {
        Duration::from_millis(3500)
    } else {
        Duration::from_secs(2)
    }
}

/// A process's resident memory in KiB (`VmRSS` of /proc/PID/status).
///
/// # Errors
/// When the process is gone or the field is missing.
pub fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("no VmRSS in /proc/{pid}/status"))
}
