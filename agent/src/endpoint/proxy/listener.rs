//! Who listens on kubelet's loopback endpoint, without ptrace: a `sock_diag` dump of the
//! LISTEN sockets in this network namespace gives each one's owner uid and cgroup id
//! (`INET_DIAG_CGROUP_ID`, the cgroup2 directory's inode number:
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/inet_diag.c#L161>); the directory's
//! `cgroup.procs` lists the processes, whose `comm` and `cmdline` anyone may read.

use std::{
    net::SocketAddr,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

use crate::kernel::diag::{CgroupId, DiagSock, STATE_ESTABLISHED, STATE_LISTEN, SockDiag};

/// At most this many cgroup directories are looked at to find one by its id.
const MAX_CGROUPS: usize = 50_000;

/// The LISTEN sockets that take a connection to `addr`: those bound to it exactly, else
/// those bound to the wildcard address on its port (the kernel prefers the exact bind:
/// `compute_score` in `net/ipv4/inet_hashtables.c`).
///
/// # Errors
/// When `sock_diag` cannot be used.
pub(super) fn listening_on(
    addr: SocketAddr,
) -> Result<Vec<DiagSock>, crate::kernel::diag::DiagError> {
    let mut diag = SockDiag::open()?;
    let mut all = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        let family = u8::try_from(family).unwrap_or_default();
        all.extend(
            diag.dump(family, STATE_LISTEN)?
                .into_iter()
                .filter(|d| d.local.port() == addr.port()),
        );
    }
    let exact: Vec<DiagSock> = all
        .iter()
        .filter(|d| d.local.ip() == addr.ip())
        .cloned()
        .collect();
    if !exact.is_empty() {
        return Ok(exact);
    }
    Ok(all
        .into_iter()
        .filter(|d| d.local.ip().is_unspecified())
        .collect())
}

/// The peers of the established sockets of cgroup `id` that are not loopback and whose
/// port is one of `ports` (the API's): a proxy's upstream connections.
///
/// # Errors
/// When `sock_diag` cannot be used.
pub(super) fn upstream_peers(
    id: CgroupId,
    ports: &[u16],
) -> Result<Vec<SocketAddr>, crate::kernel::diag::DiagError> {
    let mut diag = SockDiag::open()?;
    let mut out = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        let family = u8::try_from(family).unwrap_or_default();
        diag.dump_each(family, STATE_ESTABLISHED, |d| {
            if d.cgroup_id == Some(id)
                && !d.peer.ip().is_loopback()
                && ports.contains(&d.peer.port())
                && !out.contains(&d.peer)
            {
                out.push(d.peer);
            }
        })?;
    }
    out.sort_unstable();
    Ok(out)
}

/// The cgroup2 directory whose inode number is `id`, and its path from the hierarchy's
/// root; a breadth-first walk of the mount, bounded.
#[must_use]
pub(super) fn cgroup_dir(id: CgroupId) -> Option<(PathBuf, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = crate::node::mounts::mount_point_of(&info, "cgroup2")?;
    let mut queue = std::collections::VecDeque::from([mount.clone()]);
    let mut seen = 0;
    while let Some(dir) = queue.pop_front() {
        seen += 1;
        if seen > MAX_CGROUPS {
            return None;
        }
        if std::fs::metadata(&dir).is_ok_and(|m| m.ino() == id.0) {
            let rel = dir.strip_prefix(&mount).unwrap_or(&dir);
            return Some((dir.clone(), format!("/{}", rel.display())));
        }
        if let Ok(rd) = std::fs::read_dir(&dir) {
            queue.extend(
                rd.filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    None
}

/// The pids in the cgroup at `dir` (its `cgroup.procs`), at most `MAX_PROCS`.
#[must_use]
pub(super) fn procs(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| {
            t.lines()
                .filter_map(|l| l.trim().parse().ok())
                .take(MAX_PROCS)
                .collect()
        })
        .unwrap_or_default()
}

/// At most this many processes of one cgroup are looked at.
const MAX_PROCS: usize = 4096;

/// `/proc/PID/stat`'s start time (clock ticks after boot): with the pid, a process's
/// identity across pid reuse.
#[must_use]
pub(super) fn start_time(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    crate::endpoint::proc_start_time(&text)
}

/// Of `pids`, the oldest one whose name `known` gives a kind, else the oldest (a proxy's
/// main process, nginx's and haproxy's master, the k3s agent, starts before its workers).
#[must_use]
pub(super) fn oldest(pids: &[u32], known: impl Fn(&str) -> Option<&'static str>) -> Option<u32> {
    pids.iter()
        .filter_map(|pid| Some((known(&comm(*pid)?).is_none(), start_time(*pid)?, *pid)))
        .min()
        .map(|(_, _, pid)| pid)
}

/// The process of the cgroup at `dir` that speaks for the listener: `oldest` of its
/// processes (`known` names a proxy's kind).
#[must_use]
pub(super) fn main_process(
    dir: &Path,
    known: impl Fn(&str) -> Option<&'static str>,
) -> Option<u32> {
    oldest(&procs(dir), known)
}

/// `/proc/PID/comm`, trimmed.
#[must_use]
pub(super) fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|c| c.trim().to_owned())
}

/// `/proc/PID/cmdline`'s words. nginx rewrites its argv into one line (`nginx: master
/// process /usr/sbin/nginx -c FILE`), so words are split on NUL and on spaces.
#[must_use]
pub(super) fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split(['\0', ' '])
                .filter(|w| !w.is_empty())
                .take(1024)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
