//! Opening a path inside a proxy's root, as the proxy itself would resolve it, whatever its
//! symlinks say. `openat2(2)` with `RESOLVE_IN_ROOT` (Linux 5.6) treats the root's
//! descriptor as `/` for every component, absolute symlinks and `..` included, so an
//! `nginx.conf -> /etc/shadow` in a container resolves to the container's own
//! `/etc/shadow`, never to ours (<https://github.com/torvalds/linux/blob/v6.18/fs/namei.c>,
//! `LOOKUP_IN_ROOT`); `RESOLVE_NO_MAGICLINKS` refuses `/proc/PID/fd/N`-style links.
//!
//! Where `openat2` is missing (before 5.6: `ENOSYS`) or a filter refuses it (`EPERM`), the
//! same walk is done here one component at a time: `openat(O_PATH | O_NOFOLLOW)` from the
//! directory reached so far, a symlink's text read with `readlinkat` and walked on from the
//! root (absolute) or from its directory (relative), `..` taking back the last directory
//! walked into (never above the root), at most 40 links (the kernel's `MAXSYMLINKS`). It
//! holds a descriptor of every directory it walked through, so a directory renamed meanwhile
//! cannot lead `..` out of the root. What it loses against the kernel's walk: magic links
//! are followed as the text `readlink` gives them (inside the root, like any link) instead
//! of refused, and it costs one system call per component.

use std::{
    collections::VecDeque,
    ffi::{CString, OsStr, OsString},
    fs::File,
    io::{self, Read as _},
    os::{
        fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd},
        unix::ffi::{OsStrExt as _, OsStringExt as _},
    },
    path::{Component, Path},
};

/// The kernel's `MAXSYMLINKS` (include/linux/namei.h).
const MAX_LINKS: usize = 40;
/// Components walked in all (a link's text adds its own): a bound on a pathological path.
const MAX_STEPS: usize = 4096;

/// Why a file could not be read; the caller adds the path (`at`).
#[derive(Debug)]
pub(super) enum Failure {
    Open(io::Error),
    NotRegular(&'static str),
    TooBig(u64),
    TooMuch(u64),
}

/// A directory of ours, as a root to resolve in (`O_PATH`: no read permission needed).
///
/// # Errors
/// When it cannot be opened.
pub(super) fn dir(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: `c` is a NUL-terminated path; the result is checked before it is owned.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    owned(fd)
}

fn owned(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned to us, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `path` relative to the root: `/etc/x` and `etc/x` are both the root's `etc/x`.
fn relative(path: &Path) -> CString {
    let rel: Vec<u8> = path
        .as_os_str()
        .as_bytes()
        .iter()
        .copied()
        .skip_while(|b| *b == b'/')
        .collect();
    let rel = if rel.is_empty() { b".".to_vec() } else { rel };
    CString::new(rel).unwrap_or_else(|_| c".".to_owned())
}

/// Opens `path` inside `root` with `flags`.
fn open_in(root: &OwnedFd, path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    if path.as_os_str().as_bytes().contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    match openat2(root, path, flags) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
            walk(root, path, flags)
        }
        other => other,
    }
}

fn openat2(root: &OwnedFd, path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let rel = relative(path);
    // SAFETY: all-zero bytes are a valid `open_how` (libc marks it non-exhaustive).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = u64::try_from(flags).unwrap_or_default();
    how.resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `how` and `rel` outlive the call; the size is the struct's own.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            rel.as_ptr(),
            &raw const how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    owned(RawFd::try_from(fd).unwrap_or(-1))
}

/// `openat(dirfd, name, flags)`.
fn openat(dirfd: RawFd, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(name.as_bytes())?;
    // SAFETY: `c` is NUL-terminated; `dirfd` is a descriptor we hold.
    owned(unsafe { libc::openat(dirfd, c.as_ptr(), flags | libc::O_CLOEXEC) })
}

fn mode(fd: &OwnedFd) -> io::Result<libc::mode_t> {
    // SAFETY: all-zero bytes are a valid `stat`; fstat writes it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is ours, `st` a valid buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_mode & libc::S_IFMT)
}

fn readlinkat(dirfd: RawFd, name: &OsStr) -> io::Result<OsString> {
    let c = CString::new(name.as_bytes())?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` has the length given; `c` is NUL-terminated.
    let n = unsafe { libc::readlinkat(dirfd, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    buf.truncate(n);
    Ok(OsString::from_vec(buf))
}

fn push_front(pending: &mut VecDeque<OsString>, path: &Path) {
    for c in path.components().rev() {
        match c {
            Component::Normal(n) => pending.push_front(n.to_owned()),
            Component::ParentDir => pending.push_front(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}

/// The component walk described above, when `openat2` is not there.
fn walk(root: &OwnedFd, path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let mut dirs: Vec<OwnedFd> = Vec::new();
    let mut pending = VecDeque::new();
    push_front(&mut pending, path);
    let (mut links, mut steps) = (0, 0);
    while let Some(name) = pending.pop_front() {
        steps += 1;
        if steps > MAX_STEPS {
            return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
        }
        if name == ".." {
            dirs.pop();
            continue;
        }
        let at = dirs.last().unwrap_or(root).as_raw_fd();
        let step = openat(at, &name, libc::O_PATH | libc::O_NOFOLLOW)?;
        match mode(&step)? {
            libc::S_IFLNK => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                let target = std::path::PathBuf::from(readlinkat(at, &name)?);
                if target.is_absolute() {
                    dirs.clear();
                }
                push_front(&mut pending, &target);
            }
            libc::S_IFDIR if !pending.is_empty() => dirs.push(step),
            _ if pending.is_empty() => {
                // The last component, no link: opened for real (a link swapped in since
                // fails with ELOOP).
                return openat(at, &name, flags | libc::O_NOFOLLOW);
            }
            _ => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        }
    }
    let at = dirs.last().unwrap_or(root).as_raw_fd();
    openat(at, OsStr::new("."), flags)
}

fn kind(mode: libc::mode_t) -> Option<&'static str> {
    match mode {
        libc::S_IFREG => None,
        libc::S_IFIFO => Some("FIFO"),
        libc::S_IFSOCK => Some("socket"),
        libc::S_IFCHR => Some("character device"),
        libc::S_IFBLK => Some("block device"),
        libc::S_IFDIR => Some("directory"),
        _ => Some("special file"),
    }
}

/// The text of the regular file `path` inside `root`: opened non-blocking (a FIFO's open
/// would otherwise wait for a writer), checked with `fstat` before any read, at most
/// `max` bytes of it and no more than `left` in all.
///
/// # Errors
/// As `Failure` says.
pub(super) fn read_regular(
    root: &OwnedFd,
    path: &Path,
    max: u64,
    left: u64,
) -> Result<String, Failure> {
    let fd = open_in(
        root,
        path,
        libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
    )
    .map_err(Failure::Open)?;
    if let Some(k) = kind(mode(&fd).map_err(Failure::Open)?) {
        return Err(Failure::NotRegular(k));
    }
    let file = File::from(fd);
    let size = file.metadata().map_err(Failure::Open)?.len();
    if size > max {
        return Err(Failure::TooBig(size));
    }
    if size > left {
        return Err(Failure::TooMuch(size));
    }
    let bound = max.min(left);
    let mut bytes = Vec::new();
    // One byte past the bound tells a file that grew since fstat.
    file.take(bound + 1)
        .read_to_end(&mut bytes)
        .map_err(Failure::Open)?;
    if bytes.len() as u64 > bound {
        return Err(if bound == max {
            Failure::TooBig(bytes.len() as u64)
        } else {
            Failure::TooMuch(bytes.len() as u64)
        });
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The names in directory `path` inside `root`, at most `max` of them.
///
/// # Errors
/// When it cannot be opened or listed.
pub(super) fn list_dir(root: &OwnedFd, path: &Path, max: usize) -> io::Result<Vec<String>> {
    let fd = open_in(
        root,
        path,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK,
    )?;
    // The descriptor's own /proc entry names exactly the directory opened above.
    let rd = std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
    Ok(rd
        .take(max)
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect())
}

/// Whether `path` inside `root` is a directory.
#[must_use]
pub(super) fn is_dir(root: &OwnedFd, path: &Path) -> bool {
    open_in(root, path, libc::O_PATH).is_ok_and(|fd| mode(&fd).is_ok_and(|m| m == libc::S_IFDIR))
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;
