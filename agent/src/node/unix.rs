//! Unix stream sockets by path or abstract name: a non-blocking connect (how the status
//! socket's path is told live from stale) and a listener only its owner can connect to (the
//! status socket itself).

use std::{
    io,
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
};

/// Connects to a Unix stream socket: a path, or an abstract name after a leading NUL.
/// Non-blocking, so a listener whose queue is full (nobody accepts: a hung process) answers
/// `EAGAIN` at once instead of hanging us.
pub(crate) fn connect(addr: &[u8]) -> io::Result<OwnedFd> {
    let fd = stream_socket(libc::SOCK_NONBLOCK)?;
    let (sa, len) = sockaddr(addr)?;
    // SAFETY: `sa` is a valid `sockaddr_un` and `len` does not exceed its size.
    let r = unsafe { libc::connect(fd.as_raw_fd(), (&raw const sa).cast(), len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Binds and listens at `path` with the socket file created mode 0600 whatever the umask:
/// only its owner (root) can connect, as connecting needs write permission on the file.
/// The mode is set on the socket before `bind`, which creates the file with the socket
/// inode's mode less the umask (`unix_bind_bsd`,
/// <https://github.com/torvalds/linux/blob/v6.18/net/unix/af_unix.c>), so there is no moment
/// when the file exists with a wider mode (as a `chmod` after `bind` would leave).
pub(crate) fn listen_owner_only(path: &[u8], backlog: i32) -> anyhow::Result<OwnedFd> {
    use anyhow::Context as _;
    let fd = stream_socket(0).context("socket")?;
    // SAFETY: fchmod(2) on a descriptor we own.
    if unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) } < 0 {
        // EPERM here is a seccomp profile without fchmod (packaging/seccomp/lifeline.json has it).
        return Err(io::Error::last_os_error()).context("fchmod 0600 of the socket before bind");
    }
    let (sa, len) = sockaddr(path)?;
    // SAFETY: `sa` is a valid `sockaddr_un` and `len` does not exceed its size.
    if unsafe { libc::bind(fd.as_raw_fd(), (&raw const sa).cast(), len) } < 0 {
        return Err(io::Error::last_os_error()).context("bind");
    }
    // SAFETY: listen(2) on a bound socket we own.
    if unsafe { libc::listen(fd.as_raw_fd(), backlog) } < 0 {
        return Err(io::Error::last_os_error()).context("listen");
    }
    Ok(fd)
}

fn stream_socket(flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the result is checked before use.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | flags,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A path, or an abstract name after a leading NUL, as an address and its length.
fn sockaddr(addr: &[u8]) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: all-zero bytes are a valid `sockaddr_un`.
    let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    // A path keeps its terminating NUL from the zeroed tail.
    if addr.len() >= sa.sun_path.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    sa.sun_family = libc::sa_family_t::try_from(libc::AF_UNIX).unwrap_or_default();
    for (d, s) in sa.sun_path.iter_mut().zip(addr) {
        *d = libc::c_char::from_ne_bytes([*s]);
    }
    // An abstract name's length is exact; a path's includes its NUL.
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path)
        + addr.len()
        + usize::from(addr.first() != Some(&0));
    Ok((
        sa,
        libc::socklen_t::try_from(len).unwrap_or(libc::socklen_t::MAX),
    ))
}
