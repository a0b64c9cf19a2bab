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

use crate::kernel::diag::{DiagSock, STATE_ESTABLISHED, STATE_LISTEN, SockDiag};

/// At most this many cgroup directories are looked at to find one by its id.
const MAX_CGROUPS: usize = 50_000;

/// The LISTEN sockets that take a connection to `addr`: those bound to it exactly, else
/// those bound to the wildcard address on its port (the kernel prefers the exact bind:
/// `compute_score` in `net/ipv4/inet_hashtables.c`).
///
/// # Errors
/// When `sock_diag` cannot be used.
pub fn listening_on(addr: SocketAddr) -> Result<Vec<DiagSock>, crate::kernel::diag::DiagError> {
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
pub fn upstream_peers(
    id: u64,
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
pub fn cgroup_dir(id: u64) -> Option<(PathBuf, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = crate::node::mounts::mount_point_of(&info, "cgroup2")?;
    let mut queue = std::collections::VecDeque::from([mount.clone()]);
    let mut seen = 0;
    while let Some(dir) = queue.pop_front() {
        seen += 1;
        if seen > MAX_CGROUPS {
            return None;
        }
        if std::fs::metadata(&dir).is_ok_and(|m| m.ino() == id) {
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

/// The process of the cgroup at `dir` that speaks for the listener: the oldest one named
/// as a known proxy (`known`), else the oldest (a proxy's main process: nginx's and
/// haproxy's master, the k3s agent, start before their workers).
#[must_use]
pub fn main_process(dir: &Path, known: impl Fn(&str) -> bool) -> Option<u32> {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).ok()?;
    procs
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .filter_map(|pid| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let started = crate::endpoint::proc_start_time(&text)?;
            Some((!known(&comm(pid)?), started, pid))
        })
        .min()
        .map(|(_, _, pid)| pid)
}

/// `/proc/PID/comm`, trimmed.
#[must_use]
pub fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|c| c.trim().to_owned())
}

/// `/proc/PID/cmdline`'s words. nginx rewrites its argv into one line (`nginx: master
/// process /usr/sbin/nginx -c FILE`), so words are split on NUL and on spaces.
#[must_use]
pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split(['\0', ' '])
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Where the process's files are: `/proc/PID/root` when we may follow it (a static pod's
/// configuration is in its mount namespace), else our own root (a host service).
#[must_use]
pub fn root_of(pid: u32) -> PathBuf {
    let root = PathBuf::from(format!("/proc/{pid}/root"));
    if std::fs::read_dir(&root).is_ok() {
        root
    } else {
        PathBuf::from("/")
    }
}
