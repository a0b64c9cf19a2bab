//! One `NETLINK_ROUTE` socket for a request and its answer (the tc requests only: no
//! routes, addresses or links are read or changed through it). A pod's seccomp profile
//! refuses this socket (packaging/seccomp/lifeline.json): there the caller gets `EPERM`.

use std::{
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
};

use super::wire::{NLM_F_MULTI, NLMSG_DONE, NLMSG_ERROR, NLMSG_HDRLEN};

/// At most this many datagrams per answer: a device's filter list is a few messages; the
/// bound only guards against a kernel that never says DONE.
const MAX_DATAGRAMS: usize = 10_000;

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the result is checked before use.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Send `msg` (a complete request with sequence number `seq`) and collect the bodies of the
/// answer's messages of type `want`, until DONE, an ACK or the end of a single answer.
///
/// # Errors
/// When the socket cannot be used, or the kernel answers with an error.
pub(super) fn ask(msg: &[u8], seq: u32, want: u16) -> io::Result<Vec<Vec<u8>>> {
    let fd = socket()?;
    // SAFETY: `sockaddr_nl` zeroed is "the kernel" (pid 0); the buffers outlive the call.
    let sent = unsafe {
        let mut sa: libc::sockaddr_nl = std::mem::zeroed();
        sa.nl_family = u16::try_from(libc::AF_NETLINK).unwrap_or(16);
        libc::sendto(
            fd.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            std::ptr::from_ref(&sa).cast(),
            u32::try_from(std::mem::size_of::<libc::sockaddr_nl>()).unwrap_or(12),
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 32 * 1024];
    for _ in 0..MAX_DATAGRAMS {
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        let mut rest = &buf[..n];
        let mut multi = false;
        while rest.len() >= NLMSG_HDRLEN {
            let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let kind = u16::from_ne_bytes([rest[4], rest[5]]);
            let flags = u16::from_ne_bytes([rest[6], rest[7]]);
            let at = u32::from_ne_bytes([rest[8], rest[9], rest[10], rest[11]]);
            if len < NLMSG_HDRLEN || len > rest.len() {
                return Err(io::Error::other("malformed rtnetlink answer"));
            }
            let body = &rest[NLMSG_HDRLEN..len];
            rest = rest.get((len + 3) & !3..).unwrap_or(&[]);
            if at != seq {
                continue;
            }
            multi |= flags & NLM_F_MULTI != 0;
            match kind {
                NLMSG_DONE => return Ok(out),
                NLMSG_ERROR => {
                    let code = body
                        .get(..4)
                        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    return match code {
                        Some(0) => Ok(out),
                        Some(e) => Err(io::Error::from_raw_os_error(-e)),
                        None => Err(io::Error::other("malformed rtnetlink error")),
                    };
                }
                k if k == want => out.push(body.to_vec()),
                _ => {}
            }
        }
        if !multi && !out.is_empty() {
            return Ok(out);
        }
    }
    Err(io::Error::other("rtnetlink answer without an end"))
}
