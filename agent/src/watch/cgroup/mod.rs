//! Opening cgroup v2 directories, and the ids of a target cgroup's subtree. Finding (or
//! mounting) the hierarchy's root is `watch/cgroup/root.rs`.

pub(crate) mod root;

use std::{collections::HashSet, fs::File, os::unix::fs::MetadataExt as _, path::Path};

use anyhow::{Context as _, Result, anyhow, bail};

use crate::kernel::diag::CgroupId;
pub(crate) use crate::watch::cgroup::root::cgroup2_mount;

/// Open a cgroup directory (the hierarchy's root, where the probe attaches), checking that
/// it exists and is cgroup v2.
///
/// # Errors
/// Naming the path and the problem.
pub(crate) fn open(path: &Path) -> Result<File> {
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

pub(crate) const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;

pub(crate) fn statfs_magic(path: &Path) -> Result<u64> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: `statfs` is plain old data: all zeroes is a valid value.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `buf` a valid out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &raw mut buf) } != 0 {
        bail!(
            "cannot statfs {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    // `f_type` is signed in glibc, unsigned in musl (the image's build).
    Ok(u64::try_from(buf.f_type).unwrap_or_default())
}

/// Ids of the cgroup and its descendants: a socket belongs to the target when its
/// `INET_DIAG_CGROUP_ID` is one of them (a cgroup's id is its directory's inode).
pub(crate) fn subtree_ids(root: &Path) -> HashSet<CgroupId> {
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
        ids.insert(CgroupId(meta.ino()));
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
