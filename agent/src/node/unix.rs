//! A non-blocking connect to a Unix stream socket by path or abstract name: how the status
//! socket's path is told live from stale.

use std::{
    io,
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
};

/// Connects to a Unix stream socket: a path, or an abstract name after a leading NUL.
/// Non-blocking, so a listener whose queue is full (nobody accepts: a hung process) answers
/// `EAGAIN` at once instead of hanging us.
pub(crate) fn connect(addr: &[u8]) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the result is checked before use.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
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
    let len = libc::socklen_t::try_from(len).unwrap_or(libc::socklen_t::MAX);
    // SAFETY: `sa` is a valid `sockaddr_un` and `len` does not exceed its size.
    let r = unsafe { libc::connect(fd.as_raw_fd(), (&raw const sa).cast(), len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}
