//! bpffs and tracefs: mounted when missing (a fresh node often has neither), so that
//! the probe's objects can be inspected with bpftool and tracing tools work.

use std::path::{Path, PathBuf};

/// Mount point of the first filesystem of type `fstype` in a mountinfo text.
/// Format: `id parent major:minor root mount-point options... - fstype source super`.
pub fn mount_point_of(mountinfo: &str, fstype: &str) -> Option<PathBuf> {
    mount_of(mountinfo, fstype).map(|(point, _)| point)
}

/// Mount point and root (the path inside the filesystem that is mounted there) of the first
/// filesystem of type `fstype`.
pub fn mount_of(mountinfo: &str, fstype: &str) -> Option<(PathBuf, PathBuf)> {
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

fn is_mounted(at: &Path, fstype: &str) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|info| {
        info.lines().any(|l| {
            l.split_once(" - ").is_some_and(|(left, right)| {
                right.split_whitespace().next() == Some(fstype)
                    && left.split_whitespace().nth(4).and_then(unescape).as_deref() == Some(at)
            })
        })
    })
}

/// Mount `fstype` at `at` unless it already is. Failure is reported, not fatal:
/// the probe itself needs neither.
pub fn ensure(fstype: &str, at: &str) {
    let path = Path::new(at);
    if is_mounted(path, fstype) {
        return;
    }
    let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
    let (src, target, ty) = (c(fstype), c(at), c(fstype));
    // SAFETY: valid C strings; no data argument.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            ty.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        tracing::info!(fstype, at, "mounted (it was missing)");
    } else if !is_mounted(path, fstype) {
        let error = std::io::Error::last_os_error();
        tracing::warn!(fstype, at, %error, "could not mount; continuing without it");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_cgroup2_on_hybrid_and_unified_layouts() {
        let hybrid = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let pure = "30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            mount_point_of(hybrid, "cgroup2"),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            mount_point_of(pure, "cgroup2"),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(mount_point_of(pure, "bpf"), None);
        let spaced = "1 1 0:1 / /mnt/a\\040b rw - tmpfs x rw\n";
        assert_eq!(
            mount_point_of(spaced, "tmpfs"),
            Some(PathBuf::from("/mnt/a b"))
        );
    }
}
