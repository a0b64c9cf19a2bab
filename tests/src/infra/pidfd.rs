//! Another process's socket options, read the way that process itself would read them:
//! `getsockopt(2)` on a duplicate of its socket taken with `pidfd_getfd(2)` (Linux 5.6; it
//! needs ptrace access to the process, which the lab has as root). For fixtures that cannot
//! report their own options (the Go client, built by Go's toolchain).

use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

use anyhow::{Context, Result, bail};

use crate::assertions::keepalive::Sockopts;

/// The keepalive options of `pid`'s TCP socket bound to local `port`.
///
/// # Errors
/// When the process or the socket cannot be found, or a call fails.
pub fn keepalive_of(pid: u32, port: u16) -> Result<Sockopts> {
    let pidfd = syscall_fd(
        // SAFETY: pidfd_open(pid, 0) takes no pointers.
        unsafe { libc::syscall(libc::SYS_pidfd_open, libc::c_long::from(pid), 0) },
    )
    .with_context(|| format!("pidfd_open({pid})"))?;
    let dir = format!("/proc/{pid}/fd");
    // Bounded by the process's open files.
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))? {
        let entry = entry?;
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|l| l.to_string_lossy().starts_with("socket:["));
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if !is_socket {
            continue;
        }
        // SAFETY: pidfd_getfd(pidfd, fd, 0) takes no pointers; the result is a new fd we own.
        let raw = unsafe {
            libc::syscall(
                libc::SYS_pidfd_getfd,
                libc::c_long::from(pidfd.as_raw_fd()),
                libc::c_long::from(fd),
                0,
            )
        };
        let Ok(sock) = syscall_fd(raw) else {
            continue;
        };
        if local_port(&sock) == Some(port) {
            return read(&sock);
        }
    }
    bail!("process {pid} has no socket on local port {port}")
}

fn syscall_fd(rc: libc::c_long) -> Result<OwnedFd> {
    if rc < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let fd = i32::try_from(rc)?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn local_port(sock: &OwnedFd) -> Option<u16> {
    // SAFETY: a zeroed sockaddr_storage is valid; getsockname fills at most `len` bytes.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = libc::socklen_t::try_from(size_of::<libc::sockaddr_storage>()).ok()?;
    // SAFETY: `addr` and `len` are valid for the call.
    let rc = unsafe {
        libc::getsockname(
            sock.as_raw_fd(),
            (&raw mut addr).cast::<libc::sockaddr>(),
            &raw mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    match i32::from(addr.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a = unsafe { &*(&raw const addr).cast::<libc::sockaddr_in>() };
            Some(u16::from_be(a.sin_port))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe { &*(&raw const addr).cast::<libc::sockaddr_in6>() };
            Some(u16::from_be(a.sin6_port))
        }
        _ => None,
    }
}

fn int(sock: &OwnedFd, level: i32, name: i32) -> Result<u64> {
    let mut v: libc::c_int = 0;
    let mut len = libc::socklen_t::try_from(size_of::<libc::c_int>())?;
    // SAFETY: `v` and `len` are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&raw mut v).cast(),
            &raw mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("getsockopt");
    }
    Ok(u64::try_from(v)?)
}

fn read(sock: &OwnedFd) -> Result<Sockopts> {
    Ok(Sockopts {
        mono_ms: crate::mono_ms(),
        keepalive: int(sock, libc::SOL_SOCKET, libc::SO_KEEPALIVE)? != 0,
        idle_s: int(sock, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE)?,
        intvl_s: int(sock, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL)?,
        cnt: int(sock, libc::IPPROTO_TCP, libc::TCP_KEEPCNT)?,
        user_timeout_ms: int(sock, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT)?,
    })
}
