//! Sockets that existed before the agent started: found with a `sock_diag` dump,
//! recorded in the probe's map, and armed through the TCP iterator where the kernel
//! allows; the rest are polled through `sock_diag` every sweep.

use std::collections::HashSet;

use anyhow::Result;
use lifeline_common::{
    COMM_LEN, SockState,
    keepalive::{KA_OFF, KA_PENDING},
    sock::{ADOPT_ALREADY, ADOPT_ARMED, SOURCE_ADOPTED},
};

use crate::{
    clock,
    diag::{DiagSock, STATE_ESTABLISHED, SockDiag},
    owners,
    probe::Probe,
};

/// Which sockets count as the target's.
pub struct Target {
    pub ports: Vec<u16>,
    /// Ids of the watched cgroup and its descendants; `None` watches every cgroup.
    pub cgroup_ids: Option<HashSet<u64>>,
    pub comms: Vec<String>,
}

fn comm_matches(filter: &[String], comm: &str) -> bool {
    // The kernel truncates task names to 15 bytes.
    filter.is_empty()
        || filter
            .iter()
            .any(|f| f.as_bytes().iter().take(COMM_LEN - 1).eq(comm.as_bytes()))
}

/// Adopt pre-existing sockets; returns the cookies that must be polled. `keepalive`: the
/// iterator is to arm keepalive on them too (their records say `KA_PENDING` until it has).
///
/// # Errors
/// When the dump fails.
pub fn adopt(
    probe: &mut Probe,
    diag: &mut SockDiag,
    target: &Target,
    keepalive: bool,
) -> Result<HashSet<u64>> {
    let mut found: Vec<DiagSock> = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        let family = u8::try_from(family).unwrap_or_default();
        found.extend(diag.dump(family, STATE_ESTABLISHED)?);
    }
    found.retain(|d| {
        target.ports.contains(&d.peer.port())
            && target
                .cgroup_ids
                .as_ref()
                .is_none_or(|ids| d.cgroup_id.is_some_and(|id| ids.contains(&id)))
    });
    let inodes: Vec<u32> = found.iter().map(|d| d.inode).collect();
    let owners = owners::by_inode(&inodes);
    let now = clock::now_ns();
    let mut cookies = Vec::new();
    for d in &found {
        let owner = owners.get(&d.inode);
        if !comm_matches(&target.comms, owner.map_or("", |o| o.1.as_str())) {
            continue;
        }
        let mut s = SockState::for_endpoints(d.local, d.peer);
        s.source = SOURCE_ADOPTED;
        s.state = d.state;
        s.established_ns = now;
        s.last_event_ns = now;
        s.ka_result = if keepalive { KA_PENDING } else { KA_OFF };
        if let Some(i) = d.info {
            s.last_ack_ns = now.saturating_sub(u64::from(i.last_ack_recv_ms) * 1_000_000);
            s.packets_out = i.unacked;
            s.bytes_acked = i.bytes_acked;
            s.bytes_received = i.bytes_received;
            s.total_retrans = i.total_retrans;
            s.srtt_us = i.rtt_us;
            if i.retransmits > 0 {
                s.trouble_ns = now;
            }
        }
        if let Some((pid, comm)) = owner {
            s.owner_pid = *pid;
            let n = comm.len().min(COMM_LEN);
            s.owner_comm[..n].copy_from_slice(&comm.as_bytes()[..n]);
        }
        match probe.seed(d.cookie, &s) {
            Ok(()) => cookies.push(d.cookie),
            Err(e) => {
                tracing::error!(peer = %d.peer, error = %format!("{e:#}"), "pre-existing socket NOT watched");
            }
        }
    }
    let mut polled: HashSet<u64> = cookies.iter().copied().collect();
    let mut already = 0usize;
    if probe.can_adopt && !cookies.is_empty() {
        match probe.adopt(&cookies) {
            Ok(results) => {
                for (cookie, rc) in results {
                    match rc {
                        ADOPT_ARMED => {}
                        ADOPT_ALREADY => already += 1,
                        _ => {
                            tracing::warn!(
                                cookie,
                                errno = -rc,
                                "could not arm a pre-existing socket; polling it"
                            );
                            continue;
                        }
                    }
                    polled.remove(&cookie);
                }
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "TCP iterator failed; polling pre-existing sockets");
            }
        }
    }
    // `already_armed`: sockets a previous agent armed (it was killed before they closed);
    // their callback flags and keepalive values were left exactly as they were.
    tracing::info!(
        adopted = cookies.len(),
        armed = cookies.len() - polled.len(),
        already_armed = already,
        polled = polled.len(),
        "pre-existing sockets adopted"
    );
    Ok(polled)
}
