//! Finding the cgroup v2 hierarchy's root, where the probe attaches.
//!
//! Never hard-coded: pure v2 nodes mount it at /sys/fs/cgroup, hybrid ones (this
//! project's CI) at /sys/fs/cgroup/unified, so it is read from /proc/self/mountinfo; a
//! process that sees none (under `ip netns exec`, which remounts /sys) mounts it privately.

use std::{
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, anyhow};

use crate::watch::cgroup::{CGROUP2_SUPER_MAGIC, statfs_magic};

/// The cgroup v2 hierarchy's root as this process reaches it.
pub(crate) struct Cgroup2 {
    /// Where the hierarchy's root is mounted.
    pub mount: PathBuf,
    /// No cgroup2 mount of the root was visible (`ip netns exec` remounts /sys, which hides
    /// it): lifeline mounted one here, in a mount namespace of its own.
    pub mounted_privately: bool,
}

impl Cgroup2 {
    /// The line `run` logs (after logging is set up) when it had to mount the hierarchy.
    pub(crate) fn log(&self) {
        if self.mounted_privately {
            tracing::info!(
                at = %self.mount.display(),
                "no cgroup2 mount was visible (`ip netns exec` remounts /sys, which hides it): mounted the cgroup v2 hierarchy in a mount namespace of lifeline's own"
            );
        }
    }
}

/// The mount of the cgroup v2 hierarchy's *root* (the probe attaches there), found in
/// `/proc/self/mountinfo`; when none is visible, one mounted privately at the place the
/// host has it (so `--cgroup` paths copied from the host stay right).
///
/// The mountinfo root field is not used to name the hierarchy path: inside a cgroup
/// namespace a mount of the real root shows as `/..`. A cgroup2 directory whose inode is
/// 1 is the hierarchy's root, whatever the namespace.
///
/// # Errors
/// When no root is visible and none can be mounted, naming why.
pub(crate) fn cgroup2_mount() -> Result<Cgroup2> {
    let info =
        std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    if let Some(mount) = visible_root(&info) {
        return Ok(Cgroup2 {
            mount,
            mounted_privately: false,
        });
    }
    let other = crate::node::mounts::mount_point_of(&info, "cgroup2");
    let at = host_mount_point();
    let mounted = crate::node::mounts::private_namespace().and_then(|()| mount_at(&at));
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    match (mounted, visible_root(&info)) {
        (Ok(()), Some(mount)) => Ok(Cgroup2 {
            mount,
            mounted_privately: true,
        }),
        // Mounted, but what a cgroup namespace shows is its own subtree, not the root.
        (Ok(()), None) => Err(not_root(&at, None)),
        (Err(e), _) => Err(match other {
            Some(p) => not_root(&p, Some(&e)),
            None => anyhow!(
                "no cgroup2 filesystem is mounted here (none in /proc/self/mountinfo; `ip netns exec` remounts /sys, which hides it) and lifeline cannot mount one ({e}{}): lifeline attaches its probe to the cgroup v2 root and cannot run without one",
                if e.raw_os_error() == Some(libc::EPERM) {
                    "; mounting needs CAP_SYS_ADMIN"
                } else {
                    ""
                }
            ),
        }),
    }
}

fn not_root(mount: &Path, mount_error: Option<&std::io::Error>) -> anyhow::Error {
    anyhow!(
        "the cgroup2 mount at {} is not the root of the cgroup v2 hierarchy (this process is in a cgroup namespace of its own, as in a container){}: lifeline attaches its probe to the root; mount the host's /sys/fs/cgroup (a hostPath volume) or share the host's cgroup namespace",
        mount.display(),
        mount_error.map_or_else(String::new, |e| format!(
            ", and mounting the root failed ({e})"
        ))
    )
}

/// The last-mounted cgroup2 mount point (a later mount hides an earlier one at the same
/// place) whose directory is the hierarchy's root.
pub(crate) fn visible_root(mountinfo: &str) -> Option<PathBuf> {
    let points: Vec<PathBuf> = mountinfo
        .lines()
        .filter_map(|l| crate::node::mounts::mount_of(l, "cgroup2").map(|(p, _)| p))
        .collect();
    points.into_iter().rev().find(|p| is_hierarchy_root(p))
}

/// The root cgroup's kernfs node is the first one made: inode 1.
fn is_hierarchy_root(dir: &Path) -> bool {
    std::fs::metadata(dir).is_ok_and(|m| m.is_dir() && m.ino() == 1)
        && statfs_magic(dir).is_ok_and(|m| m == CGROUP2_SUPER_MAGIC)
}

/// Where the host (PID 1's mount namespace) has the hierarchy, else `/sys/fs/cgroup`.
fn host_mount_point() -> PathBuf {
    std::fs::read_to_string("/proc/1/mountinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .filter_map(|l| crate::node::mounts::mount_of(l, "cgroup2"))
                .find(|(_, root)| root == Path::new("/"))
                .map(|(p, _)| p)
        })
        .unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup"))
}

/// Mounts cgroup2 at `at` (in the private namespace). On a hybrid host `at` is
/// `/sys/fs/cgroup/unified`, which a fresh sysfs lacks: a tmpfs on its parent makes room.
fn mount_at(at: &Path) -> std::io::Result<()> {
    if !at.is_dir() {
        let parent = at.parent().unwrap_or(Path::new("/"));
        crate::node::mounts::mount("tmpfs", parent, "tmpfs", Some("mode=755"))?;
        std::fs::create_dir_all(at)?;
    }
    crate::node::mounts::mount("cgroup2", at, "cgroup2", None)
}
