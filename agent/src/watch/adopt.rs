//! Sockets that existed before the agent started: found with a `sock_diag` dump,
//! recorded in the probe's map, and armed through the TCP iterator where the kernel
//! allows; the rest are polled through `sock_diag` every sweep.

use std::{
    collections::{BTreeSet, HashSet},
    net::SocketAddr,
};

use anyhow::Result;
use lifeline_common::{
    COMM_LEN, SockState,
    features::ITER_CALLBACKS,
    keepalive::{KA_NO_ITERATOR, KA_OFF, KA_PENDING},
    sock::{ADOPT_ALREADY, ADOPT_ARMED, ADOPT_NO_ITERATOR, ADOPT_PENDING, SOURCE_ADOPTED},
    watch::{BY_CGROUP, BY_COMM, BY_ENDPOINT},
};

use crate::{
    judge::Cookie,
    kernel::{
        clock,
        diag::{DiagSock, STATE_ESTABLISHED, SockDiag},
        owners,
        probe::Probe,
    },
    settings::Targets,
};

/// Which existing sockets are targets, and why (`lifeline_common::watch::BY_*`; 0: not one).
pub(crate) struct Selector<'a> {
    pub ports: &'a [u16],
    pub targets: &'a Targets,
    /// Ids of the present target cgroups and their descendants.
    pub cgroup_ids: HashSet<crate::kernel::diag::CgroupId>,
    /// Endpoint peers to select (those just added to the endpoint-client target).
    pub peers: BTreeSet<SocketAddr>,
}

impl Selector<'_> {
    fn reasons(&self, d: &DiagSock, comm: &str) -> u32 {
        if !self.ports.contains(&d.peer.port()) {
            return 0;
        }
        let mut r = 0;
        if d.cgroup_id.is_some_and(|id| self.cgroup_ids.contains(&id)) {
            r |= BY_CGROUP;
        }
        if comm_matches(&self.targets.comms, comm) {
            r |= BY_COMM;
        }
        if self.peers.contains(&d.peer) {
            r |= BY_ENDPOINT;
        }
        r
    }
}

fn comm_matches(filter: &[String], comm: &str) -> bool {
    // The kernel truncates task names to 15 bytes.
    filter
        .iter()
        .any(|f| !comm.is_empty() && f.as_bytes().iter().take(COMM_LEN - 1).eq(comm.as_bytes()))
}

/// The sockets one adoption recorded.
#[derive(Debug, Default)]
pub(crate) struct Adopted {
    /// Those whose callbacks could not be armed: polled every sweep.
    pub polled: HashSet<Cookie>,
    /// Every socket recorded now (armed or polled): the daemon reads each into its mirror
    /// at once (an armed one sends no news until something happens to it).
    pub all: HashSet<Cookie>,
}

impl Adopted {
    pub(crate) fn extend(&mut self, other: Self) {
        self.polled.extend(other.polled);
        self.all.extend(other.all);
    }
}

/// Adopt pre-existing sockets; returns the cookies recorded, and those that must be polled.
/// `keepalive`: the iterator is to arm keepalive on them too (their records say
/// `KA_PENDING` until it has).
///
/// # Errors
/// When the dump fails.
pub(crate) fn adopt(
    probe: &mut Probe,
    diag: &mut SockDiag,
    select: &Selector<'_>,
    keepalive: bool,
) -> Result<Adopted> {
    let mut found: Vec<DiagSock> = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        let family = u8::try_from(family).unwrap_or_default();
        found.extend(diag.dump(family, STATE_ESTABLISHED)?);
    }
    found.retain(|d| select.ports.contains(&d.peer.port()));
    let inodes: Vec<u32> = found.iter().map(|d| d.inode).collect();
    let found_owners = owners::by_inode(&inodes);
    found_owners.warn_unnamed(inodes.len());
    let owners = &found_owners.by_inode;
    let now = clock::now().as_nanos();
    let mut cookies = Vec::new();
    for d in &found {
        let owner = owners.get(&d.inode);
        let reasons = select.reasons(d, owner.map_or("", |o| o.1.as_str()));
        if reasons == 0 {
            continue;
        }
        let mut s = SockState::for_endpoints(d.local, d.peer);
        s.reasons = reasons;
        s.source = SOURCE_ADOPTED;
        s.state = d.state;
        s.established_ns = now;
        // Until the iterator has run, or for good when it cannot load (status shows both).
        let can = probe.can_adopt;
        s.adopt = if can {
            ADOPT_PENDING
        } else {
            ADOPT_NO_ITERATOR
        };
        s.ka_result = match (keepalive, can) {
            (false, _) => KA_OFF,
            (true, true) => KA_PENDING,
            (true, false) => KA_NO_ITERATOR,
        };
        if let Some(i) = d.info {
            s.last_ack_ns = now.saturating_sub(u64::from(i.last_ack_recv_ms) * 1_000_000);
            s.packets_out = i.unacked;
            s.bytes_acked = i.bytes_acked;
            s.bytes_received = i.bytes_received;
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
            Ok(true) => cookies.push(d.cookie),
            // Already watched (sock_ops saw it connect): nothing to adopt.
            Ok(false) => {}
            Err(e) => {
                tracing::error!(peer = %d.peer, error = %format!("{e:#}"), "pre-existing socket NOT watched");
            }
        }
    }
    let mut polled: HashSet<u64> = cookies.iter().copied().collect();
    let mut already = 0usize;
    let mut refused = None;
    if probe.can_adopt && !cookies.is_empty() {
        match probe.adopt(&cookies) {
            Ok(results) => {
                for (cookie, rc) in results {
                    match rc {
                        ADOPT_ARMED => {}
                        ADOPT_ALREADY => already += 1,
                        _ => {
                            refused = Some(-rc);
                            continue;
                        }
                    }
                    polled.remove(&cookie);
                }
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "TCP iterator failed; polling pre-existing sockets");
                for c in &cookies {
                    probe.set_adopt(*c, ADOPT_NO_ITERATOR, KA_NO_ITERATOR);
                }
            }
        }
    }
    if let Some(errno) = refused {
        // One line, not one per socket: the kernel refuses all of them for the same reason.
        tracing::warn!(
            errno,
            "the TCP iterator cannot arm the callbacks of pre-existing sockets on this kernel (needs Linux {}.{}): they are polled through sock_diag every sweep",
            ITER_CALLBACKS.since.0,
            ITER_CALLBACKS.since.1
        );
    }
    let adopted = Adopted {
        polled: polled.into_iter().map(Cookie).collect(),
        all: cookies.into_iter().map(Cookie).collect(),
    };
    adopted.log(already);
    Ok(adopted)
}

impl Adopted {
    /// `already_armed`: sockets a previous agent armed (it was killed before they closed);
    /// their callback flags and keepalive values were left exactly as they were.
    fn log(&self, already_armed: usize) {
        tracing::info!(
            adopted = self.all.len(),
            armed = self.all.len() - self.polled.len(),
            already_armed,
            polled = self.polled.len(),
            "pre-existing sockets adopted"
        );
    }
}
