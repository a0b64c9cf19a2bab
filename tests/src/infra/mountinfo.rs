//! Where cgroup2 is mounted, read from /proc/self/mountinfo (never hard-coded): the lab's
//! cgroups, the sweep of leftovers and the tests that compare paths all start from it.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// Where cgroup2 is mounted, read from /proc/self/mountinfo: `/sys/fs/cgroup` on pure-v2
/// nodes, `/sys/fs/cgroup/unified` on hybrid ones such as this project's machines.
///
/// # Errors
/// When mountinfo cannot be read or has no cgroup2 mount.
pub fn cgroup2_mount() -> Result<PathBuf> {
    cgroup2_mounts()?
        .into_iter()
        .next()
        .context("no cgroup2 mount in /proc/self/mountinfo")
}

/// Every cgroup2 mount point (normally one).
///
/// # Errors
/// When /proc/self/mountinfo cannot be read.
pub fn cgroup2_mounts() -> Result<Vec<PathBuf>> {
    let info =
        std::fs::read_to_string("/proc/self/mountinfo").context("read /proc/self/mountinfo")?;
    // Fields: id parent maj:min root mountpoint opts [optional...] - fstype source superopts
    Ok(info
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let mountpoint = pre.split_whitespace().nth(4)?;
            (post.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mountpoint))
        })
        .collect())
}
