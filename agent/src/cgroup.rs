//! Finding the cgroup v2 hierarchy, and the ids of a target cgroup's subtree.
//!
//! Never hard-coded: pure v2 nodes mount it at /sys/fs/cgroup, hybrid ones (this
//! project's CI) at /sys/fs/cgroup/unified, so it is read from /proc/self/mountinfo.

use std::{
    collections::HashSet,
    fs::File,
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, anyhow, bail};

/// Where the cgroup2 filesystem is mounted, and which path of the hierarchy is mounted
/// there (`/`, unless this runs in a private cgroup namespace), from `/proc/self/mountinfo`.
///
/// # Errors
/// When no cgroup2 filesystem is mounted.
pub fn cgroup2_mount() -> Result<(PathBuf, PathBuf)> {
    let info =
        std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    crate::mounts::mount_of(&info, "cgroup2").ok_or_else(|| {
        anyhow!("no cgroup2 filesystem is mounted (none in /proc/self/mountinfo): lifeline attaches its probe to the cgroup v2 root and cannot run without one")
    })
}

/// Open a cgroup directory (the hierarchy's root, where the probe attaches), checking that
/// it exists and is cgroup v2.
///
/// # Errors
/// Naming the path and the problem.
pub fn open(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow!("cgroup {} does not exist", path.display()),
        _ => anyhow!("cannot read cgroup {}: {e}", path.display()),
    })?;
    if !meta.is_dir() {
        bail!("cgroup {} is not a directory", path.display());
    }
    let magic = statfs_magic(path)?;
    if magic != CGROUP2_SUPER_MAGIC {
        bail!(
            "{} is not on a cgroup v2 filesystem (sock_ops attaches to cgroup v2 only)",
            path.display()
        );
    }
    File::open(path).with_context(|| format!("cannot open cgroup {}", path.display()))
}

const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

fn statfs_magic(path: &Path) -> Result<i64> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: `c` is a valid C string and `buf` a valid out-pointer.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &raw mut buf) } != 0 {
        bail!(
            "cannot statfs {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(buf.f_type)
}

/// Ids of the cgroup and its descendants: a socket belongs to the target when its
/// `INET_DIAG_CGROUP_ID` is one of them (a cgroup's id is its directory's inode).
pub fn subtree_ids(root: &Path) -> HashSet<u64> {
    let mut ids = HashSet::new();
    let mut stack = vec![root.to_path_buf()];
    // Bounded: a node has hundreds of cgroups, not hundreds of thousands.
    while let Some(dir) = stack.pop() {
        if ids.len() >= 100_000 {
            break;
        }
        let Ok(meta) = std::fs::metadata(&dir) else {
            continue;
        };
        ids.insert(meta.ino());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        stack.extend(
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    ids
}
