//! Keepalive options of a socket of the agent's own, through plain `setsockopt(2)` and
//! `getsockopt(2)`: what `lifeline check` uses to see the kernel's values; and its cookie.

use std::{io, net::TcpStream, os::fd::AsRawFd};

fn set(s: &TcpStream, level: i32, name: i32, v: i32) -> io::Result<()> {
    let len = libc::socklen_t::try_from(size_of::<i32>()).unwrap_or(4);
    // SAFETY: a valid fd and a pointer to a live i32 of `len` bytes.
    let rc = unsafe { libc::setsockopt(s.as_raw_fd(), level, name, (&raw const v).cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get(s: &TcpStream, level: i32, name: i32) -> io::Result<u32> {
    let mut v: i32 = 0;
    let mut len = libc::socklen_t::try_from(size_of::<i32>()).unwrap_or(4);
    // SAFETY: a valid fd, a live i32 and its length.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&raw mut v).cast(),
            &raw mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(v).map_err(|_| io::Error::other(format!("negative option value {v}")))
}

/// What Go's `net.Dialer` does right after `connect()` returns: `SO_KEEPALIVE`, then
/// `TCP_KEEPIDLE`, `TCP_KEEPINTVL`, `TCP_KEEPCNT` (Go 1.23+), one call each.
///
/// # Errors
/// The first call the kernel refuses.
pub(crate) fn go_dialer(s: &TcpStream, (idle, intvl, cnt): (u32, u32, u32)) -> io::Result<()> {
    let i = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    set(s, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    set(s, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, i(idle))?;
    set(s, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, i(intvl))?;
    set(s, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, i(cnt))
}

/// The socket's keepalive idle, interval and count as the kernel has them.
///
/// # Errors
/// When the kernel refuses a read.
pub(crate) fn read(s: &TcpStream) -> io::Result<(u32, u32, u32)> {
    Ok((
        get(s, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE)?,
        get(s, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL)?,
        get(s, libc::IPPROTO_TCP, libc::TCP_KEEPCNT)?,
    ))
}

/// `SO_COOKIE` (4.13): the same cookie `bpf_get_socket_cookie` returns.
pub(crate) fn socket_cookie(fd: &impl AsRawFd) -> anyhow::Result<u64> {
    let mut cookie: u64 = 0;
    let mut len = libc::socklen_t::try_from(size_of::<u64>()).unwrap_or_default();
    // SAFETY: getsockopt writes at most `len` bytes into `cookie`, a valid u64.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_COOKIE,
            (&raw mut cookie).cast(),
            &raw mut len,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        anyhow::bail!("getsockopt(SO_COOKIE): {e}");
    }
    Ok(cookie)
}

/// A non-blocking TCP socket, closed on drop.
pub(crate) fn tcp_socket() -> anyhow::Result<std::os::fd::OwnedFd> {
    // SAFETY: plain socket(2); the fd is owned at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error())
            .map_err(|e| anyhow::anyhow!("socket(AF_INET, SOCK_STREAM): {e}"));
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}
