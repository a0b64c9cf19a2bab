//! Removing a network namespace or a cgroup the lab made, with whatever still runs inside:
//! what the `NetNs` and `Cgroup` guards do on drop, and what the sweep does to the leftovers
//! of a lab process that died before its guards ran.

use std::path::Path;
use std::time::Duration;

use crate::infra::cmd::run_args;

/// Pids of processes whose network namespace is `name`.
#[must_use]
pub(crate) fn netns_pids(name: &str) -> Vec<i32> {
    run_args(&["ip", "netns", "pids", name])
        .map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Kills what runs in namespace `name`, then deletes it; failures are reported, not raised
/// (this runs in `Drop`).
pub(crate) fn netns(name: &str) {
    // Kill stragglers first: a namespace with live processes outlives `ip netns del`
    // (only its name goes), and its sockets and veths would linger.
    for _ in 0..20 {
        let pids = netns_pids(name);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: plain kill(2) on a pid we found in our own namespace.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Err(e) = run_args(&["ip", "netns", "del", name]) {
        eprintln!("lab: cannot delete netns {name}: {e:#}");
    }
}

/// Pids currently in the cgroup at `path`.
#[must_use]
pub(crate) fn cgroup_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|p| p.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kills every process in the cgroup at `path`, then removes it; failures are reported, not
/// raised (this runs in `Drop`).
pub(crate) fn cgroup(path: &Path) {
    // cgroup.kill (Linux 5.14+) kills everything at once; kill(2) per pid as a fallback.
    let _ = std::fs::write(path.join("cgroup.kill"), "1");
    for _ in 0..50 {
        let pids = cgroup_pids(path);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: kill(2) on pids that live in the test's own cgroup.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Children first (a unit's or a static pod's cgroup nests a few levels), bounded.
    if let Ok(rd) = std::fs::read_dir(path) {
        for e in rd.filter_map(Result::ok).take(64) {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                cgroup(&e.path());
            }
        }
    }
    // rmdir fails while a (zombie) member is being torn down; retry briefly.
    for _ in 0..50 {
        if std::fs::remove_dir(path).is_ok() || !path.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("lab: cannot remove cgroup {}", path.display());
}
