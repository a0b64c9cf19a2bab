//! `sock_diag` netlink: the kernel's authoritative view of a socket (`tcp_info`), the
//! dump of existing sockets, and `SOCK_DESTROY`, the same request `ss -K` sends
//! (`CONFIG_INET_DIAG_DESTROY`, Linux 4.5; `tcp_abort()` in net/ipv4/tcp.c gives the
//! owner ECONNABORTED). Everything here acts on the caller's network namespace.

pub(crate) mod states;
mod tcp_info;
mod wire;

use std::{
    io,
    net::SocketAddr,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
};

pub(crate) use tcp_info::TcpInfo;
pub(crate) use wire::{CgroupId, DiagSock};
use wire::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, NLMSG_HDRLEN, SOCK_DESTROY,
    SOCK_DIAG_BY_FAMILY, family_of, parse_msg, request,
};

use crate::judge::Cookie;

/// TCP states as a `sock_diag` bitmask.
pub(crate) const STATE_ESTABLISHED: u32 = 1 << 1;
/// `TCP_LISTEN` (10) as a state mask bit.
pub(crate) const STATE_LISTEN: u32 = 1 << 10;
pub(crate) const ALL_STATES: u32 = u32::MAX;

#[derive(Debug, thiserror::Error)]
pub(crate) enum DiagError {
    #[error("sock_diag netlink I/O failed: {0}")]
    Io(#[from] io::Error),
    #[error("the kernel refused the sock_diag request: {0}")]
    Kernel(io::Error),
    #[error("malformed sock_diag reply")]
    Malformed,
}

/// What a `SOCK_DESTROY` request achieved.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Destroyed {
    Killed,
    /// The socket was already gone: nothing left to do.
    Gone,
}

/// What the daemon asks of `sock_diag`: one socket's view, a dump, a kill. `SockDiag` is the
/// kernel's; the daemon's sweep tests answer with a fake (`daemon/fake.rs`).
pub(crate) trait Diag {
    /// The socket `local -> peer` with this cookie, or `None` when it no longer exists.
    ///
    /// # Errors
    /// On netlink failure or when the kernel refuses the request.
    fn get(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        cookie: Cookie,
    ) -> Result<Option<DiagSock>, DiagError>;

    /// Every TCP socket of `family` in `states`, handed to `each` as it is decoded.
    ///
    /// # Errors
    /// On netlink failure.
    fn dump_each(
        &mut self,
        family: u8,
        states: u32,
        each: &mut dyn FnMut(DiagSock),
    ) -> Result<(), DiagError>;

    /// Abort the socket (`SOCK_DESTROY`).
    ///
    /// # Errors
    /// On netlink failure, or the kernel's refusal.
    fn destroy(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        cookie: Cookie,
    ) -> Result<Destroyed, DiagError>;
}

/// One datagram of a dump: the kernel fills up to a page-sized skb per message batch
/// (`netlink_dump()`), well under this.
const RECV_BUF: usize = 64 * 1024;

pub(crate) struct SockDiag {
    fd: OwnedFd,
    seq: u32,
    /// The receive buffer, kept: zeroing 64 KiB for each one-socket read was a tenth of
    /// the agent's CPU when 100,000 idle sockets' probes were being looked at.
    buf: Vec<u8>,
}

impl Diag for SockDiag {
    fn get(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        cookie: Cookie,
    ) -> Result<Option<DiagSock>, DiagError> {
        Self::get(self, local, peer, cookie.0)
    }

    fn dump_each(
        &mut self,
        family: u8,
        states: u32,
        each: &mut dyn FnMut(DiagSock),
    ) -> Result<(), DiagError> {
        Self::dump_each(self, family, states, each)
    }

    fn destroy(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        cookie: Cookie,
    ) -> Result<Destroyed, DiagError> {
        Self::destroy(self, local, peer, cookie.0)
    }
}

impl SockDiag {
    /// Open a `NETLINK_SOCK_DIAG` socket.
    ///
    /// # Errors
    /// When the socket cannot be created.
    pub(crate) fn open() -> Result<Self, DiagError> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error().into());
        }
        Ok(Self {
            // SAFETY: `fd` is a fresh descriptor we own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            seq: 0,
            buf: vec![0u8; RECV_BUF],
        })
    }

    /// Every TCP socket of `family` in `states`, with `tcp_info` and cgroup id.
    ///
    /// # Errors
    /// On netlink failure.
    pub(crate) fn dump(&mut self, family: u8, states: u32) -> Result<Vec<DiagSock>, DiagError> {
        let mut out = Vec::new();
        self.dump_each(family, states, |m| out.push(m))?;
        Ok(out)
    }

    /// `dump`, handing each socket to `each` as it is decoded (nothing is collected: a
    /// status answer dumps 100,000 sockets).
    ///
    /// # Errors
    /// On netlink failure.
    pub(crate) fn dump_each(
        &mut self,
        family: u8,
        states: u32,
        each: impl FnMut(DiagSock),
    ) -> Result<(), DiagError> {
        self.send(
            SOCK_DIAG_BY_FAMILY,
            NLM_F_REQUEST | NLM_F_DUMP,
            &request(family, states, None),
        )?;
        self.recv(each)
    }

    /// The socket `local -> peer` with this cookie, or `None` when it no longer exists.
    ///
    /// # Errors
    /// On netlink failure or when the kernel refuses the request.
    pub(crate) fn get(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        cookie: u64,
    ) -> Result<Option<DiagSock>, DiagError> {
        let req = request(family_of(&local), ALL_STATES, Some((local, peer, cookie)));
        self.send(SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, &req)?;
        let mut found = None;
        match self.recv(|m| found = Some(m)) {
            Err(DiagError::Kernel(e)) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
            Ok(()) => Ok(found),
        }
    }

    /// Abort the socket with `SOCK_DESTROY`.
    ///
    /// # Errors
    /// On netlink failure, or the kernel's refusal (EOPNOTSUPP without
    /// `CONFIG_INET_DIAG_DESTROY`, EPERM without `CAP_NET_ADMIN`).
    pub(crate) fn destroy(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        cookie: u64,
    ) -> Result<Destroyed, DiagError> {
        let req = request(family_of(&local), ALL_STATES, Some((local, peer, cookie)));
        self.send(SOCK_DESTROY, NLM_F_REQUEST | NLM_F_ACK, &req)?;
        match self.recv(|_| ()) {
            Ok(()) => Ok(Destroyed::Killed),
            Err(DiagError::Kernel(e)) if e.raw_os_error() == Some(libc::ENOENT) => {
                Ok(Destroyed::Gone)
            }
            Err(e) => Err(e),
        }
    }

    fn send(&mut self, kind: u16, flags: u16, payload: &[u8]) -> Result<(), DiagError> {
        self.seq = self.seq.wrapping_add(1);
        let len = NLMSG_HDRLEN + payload.len();
        let mut msg = Vec::with_capacity(len);
        msg.extend_from_slice(
            &u32::try_from(len)
                .map_err(|_| DiagError::Malformed)?
                .to_ne_bytes(),
        );
        msg.extend_from_slice(&kind.to_ne_bytes());
        msg.extend_from_slice(&flags.to_ne_bytes());
        msg.extend_from_slice(&self.seq.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(payload);
        // SAFETY: `sockaddr_nl` zeroed is "the kernel" (pid 0); buffers outlive the call.
        let sent = unsafe {
            let mut sa: libc::sockaddr_nl = std::mem::zeroed();
            sa.nl_family = u16::try_from(libc::AF_NETLINK).unwrap_or(16);
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                std::ptr::from_ref(&sa).cast(),
                u32::try_from(std::mem::size_of::<libc::sockaddr_nl>()).unwrap_or(12),
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error().into());
        }
        Ok(())
    }

    /// Read replies for the current sequence number until DONE, an ACK/error, or (for
    /// a non-dump request) the first answer.
    fn recv(&mut self, mut each: impl FnMut(DiagSock)) -> Result<(), DiagError> {
        let buf = &mut self.buf;
        // A dump of N sockets takes about N / 200 datagrams; the bound only guards
        // against a kernel that never says DONE.
        for _ in 0..100_000 {
            // SAFETY: `buf` is valid for `buf.len()` bytes.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
            let mut rest = &buf[..n];
            let mut answered = false;
            while rest.len() >= NLMSG_HDRLEN {
                let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                let kind = u16::from_ne_bytes([rest[4], rest[5]]);
                let seq = u32::from_ne_bytes([rest[8], rest[9], rest[10], rest[11]]);
                if len < NLMSG_HDRLEN || len > rest.len() {
                    return Err(DiagError::Malformed);
                }
                let body = &rest[NLMSG_HDRLEN..len];
                rest = &rest[(len + 3) & !3..];
                if seq != self.seq {
                    continue; // a late answer to an earlier request
                }
                match kind {
                    NLMSG_DONE => return Ok(()),
                    NLMSG_ERROR => {
                        let code = body
                            .get(..4)
                            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                        return match code {
                            Some(0) => Ok(()),
                            Some(e) => Err(DiagError::Kernel(io::Error::from_raw_os_error(-e))),
                            None => Err(DiagError::Malformed),
                        };
                    }
                    SOCK_DIAG_BY_FAMILY => {
                        each(parse_msg(body).ok_or(DiagError::Malformed)?);
                        answered = true;
                    }
                    _ => {}
                }
            }
            if answered && !multipart(buf) {
                return Ok(());
            }
        }
        Err(DiagError::Malformed)
    }
}

/// Whether the first message in `buf` is part of a multipart (dump) answer.
fn multipart(buf: &[u8]) -> bool {
    const NLM_F_MULTI: u16 = 2;
    u16::from_ne_bytes([buf[6], buf[7]]) & NLM_F_MULTI != 0
}
