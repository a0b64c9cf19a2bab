//! bpffs and tracefs: mounted when missing (a fresh node often has neither): the cgroup
//! tracepoints are found through tracefs; bpffs only serves whoever inspects with bpftool.
//! `check` makes the same attempt in a private mount namespace, so its rows say exactly what
//! `run` will manage (in a pod without `CAP_SYS_ADMIN`: nothing, only host mounts count).

use std::path::{Path, PathBuf};

/// Mount point of the first filesystem of type `fstype` in a mountinfo text.
/// Format: `id parent major:minor root mount-point options... - fstype source super`.
pub(crate) fn mount_point_of(mountinfo: &str, fstype: &str) -> Option<PathBuf> {
    mount_of(mountinfo, fstype).map(|(point, _)| point)
}

/// Mount point and root (the path inside the filesystem that is mounted there) of the first
/// filesystem of type `fstype`.
pub(crate) fn mount_of(mountinfo: &str, fstype: &str) -> Option<(PathBuf, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != fstype {
            return None;
        }
        let mut fields = left.split_whitespace();
        let root = unescape(fields.nth(3)?)?;
        Some((unescape(fields.next()?)?, root))
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> Option<PathBuf> {
    let mut out = Vec::with_capacity(field.len());
    let b = field.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            out.push(u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 4]).ok()?, 8).ok()?);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}

/// Whether a filesystem of type `fstype` is mounted exactly at `at`.
pub(crate) fn is_mounted(at: &Path, fstype: &str) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|info| {
        info.lines().any(|l| {
            l.split_once(" - ").is_some_and(|(left, right)| {
                right.split_whitespace().next() == Some(fstype)
                    && left.split_whitespace().nth(4).and_then(unescape).as_deref() == Some(at)
            })
        })
    })
}

/// What `ensure` found or did.
pub(crate) enum MountOutcome {
    /// It was mounted already.
    Present,
    /// Mounted now.
    Mounted,
    /// Missing, and `mount(2)` failed (`EPERM` without `CAP_SYS_ADMIN`, as in a pod).
    Failed(std::io::Error),
}

/// Mount `fstype` at `at` unless it already is, and log what happened. A failure is not
/// fatal: the probe needs neither (without tracefs the cgroup tracepoints fall back to the
/// sweep; bpffs is only for inspecting, lifeline pins nothing).
pub(crate) fn ensure(fstype: &str, at: &str) -> MountOutcome {
    let outcome = try_ensure(fstype, Path::new(at));
    match &outcome {
        MountOutcome::Present => {}
        MountOutcome::Mounted => tracing::info!(fstype, at, "mounted (it was missing)"),
        MountOutcome::Failed(error) if fstype == "bpf" => tracing::info!(
            fstype, at, %error,
            "not mounted, and could not mount it; not needed: lifeline pins nothing"
        ),
        MountOutcome::Failed(error) => {
            tracing::warn!(fstype, at, %error, "could not mount; continuing without it");
        }
    }
    outcome
}

/// `ensure` without the log line: `check` reports it in its table.
pub(crate) fn try_ensure(fstype: &str, at: &Path) -> MountOutcome {
    if is_mounted(at, fstype) {
        return MountOutcome::Present;
    }
    match mount(fstype, at, fstype, None) {
        Ok(()) => MountOutcome::Mounted,
        // Lost a race with another mounter: it is there, which is what counts.
        Err(_) if is_mounted(at, fstype) => MountOutcome::Present,
        Err(e) => MountOutcome::Failed(e),
    }
}

/// `mount(2)` of a filesystem with no flags but `nosuid,nodev,noexec`.
///
/// # Errors
/// The kernel's.
pub(crate) fn mount(
    source: &str,
    at: &Path,
    fstype: &str,
    data: Option<&str>,
) -> std::io::Result<()> {
    let c = |s: &[u8]| std::ffi::CString::new(s).map_err(std::io::Error::other);
    let (src, target, ty) = (
        c(source.as_bytes())?,
        c(at.as_os_str().as_encoded_bytes())?,
        c(fstype.as_bytes())?,
    );
    let data = data.map(|d| c(d.as_bytes())).transpose()?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // SAFETY: valid C strings; `data` is a C string or null.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            ty.as_ptr(),
            flags,
            data.as_ref()
                .map_or(std::ptr::null(), |d| d.as_ptr().cast()),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A mount namespace of this process's own, propagation private, so what it mounts from
/// now on is seen by nobody else and goes away with it.
///
/// # Errors
/// `unshare(2)`'s or `mount(2)`'s (`EPERM` without `CAP_SYS_ADMIN`).
pub(crate) fn private_namespace() -> std::io::Result<()> {
    // SAFETY: plain syscalls; on failure nothing has changed for anyone else.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let flags = libc::MS_REC | libc::MS_PRIVATE;
        let rc = libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        );
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "mounts_tests.rs"]
mod tests;
