//! Who serves kubelet's loopback connection: the hop is the process at the other end of
//! kubelet's own established socket, never whoever listens on the address (anyone may bind
//! it beside the proxy with `SO_REUSEPORT`, or while the proxy restarts). One `sock_diag`
//! dump of the established sockets holds both ends of a loopback connection: kubelet's
//! (created in one of kubelet's cgroups, its peer the kubeconfig's address) and the server's
//! (the same four-tuple reversed). An accepted socket carries its listener's cgroup
//! (`sk_clone_lock` copies `sk_cgrp_data`, `cgroup_sk_clone` keeps it:
//! <https://github.com/torvalds/linux/blob/v6.18/kernel/cgroup/cgroup.c>), so its cgroup id is
//! the cgroup of the process that made the listener kubelet reached, whichever worker
//! accepted it. Its inode is held by that worker: where `/proc/PID/fd` can be read (it takes
//! ptrace access), the proxy's process is found by it.

use std::{collections::HashSet, net::SocketAddr, path::Path};

use crate::kernel::diag::{CgroupId, DiagError, DiagSock, STATE_ESTABLISHED, SockDiag};

/// One of kubelet's connections to the address and the server's end of it.
#[derive(Clone, Debug)]
pub(super) struct Served {
    pub kubelet: DiagSock,
    pub server: DiagSock,
}

/// Every connection of kubelet's (a socket created in one of `kubelet` cgroups) to
/// `listen`, with its server end (loopback: both ends are in this namespace).
///
/// # Errors
/// When `sock_diag` cannot be used.
pub(super) fn served(
    listen: SocketAddr,
    kubelet: &HashSet<CgroupId>,
) -> Result<Vec<Served>, DiagError> {
    let mut diag = SockDiag::open()?;
    let family = u8::try_from(if listen.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    })
    .unwrap_or_default();
    let all = diag.dump(family, STATE_ESTABLISHED)?;
    let mut out = Vec::new();
    for k in all
        .iter()
        .filter(|d| d.peer == listen && d.cgroup_id.is_some_and(|id| kubelet.contains(&id)))
    {
        if let Some(s) = all.iter().find(|s| s.local == k.peer && s.peer == k.local) {
            out.push(Served {
                kubelet: k.clone(),
                server: s.clone(),
            });
        }
    }
    Ok(out)
}

/// `served`, looked at again for up to a second while kubelet has no connection there (it
/// re-dials within a second of a proxy restart or a closed connection).
///
/// # Errors
/// As `served`.
pub(super) fn served_soon(
    listen: SocketAddr,
    kubelet: &HashSet<CgroupId>,
) -> Result<Vec<Served>, DiagError> {
    for _ in 0..10 {
        let found = served(listen, kubelet)?;
        if !found.is_empty() {
            return Ok(found);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    served(listen, kubelet)
}

/// Per process, at most this many descriptors are looked at.
const MAX_FDS: usize = 65_536;

/// Which of `pids` hold the socket with `inode` (`socket:[INODE]` in `/proc/PID/fd`).
/// `None` when no process's descriptors could be read (no ptrace access: the unit has no
/// `CAP_SYS_PTRACE`), so the caller knows to use the cgroup alone.
#[must_use]
pub(super) fn holders(pids: &[u32], inode: u32) -> Option<Vec<u32>> {
    let want = format!("socket:[{inode}]");
    let mut readable = false;
    let mut out = Vec::new();
    for pid in pids {
        let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        readable = true;
        let holds = rd
            .take(MAX_FDS)
            .filter_map(Result::ok)
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == Path::new(&want)));
        if holds {
            out.push(*pid);
        }
    }
    readable.then_some(out)
}
