//! Encoding and decoding of `sock_diag` netlink messages (`include/uapi/linux/inet_diag.h`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::{TcpInfo, tcp_info};

pub(super) const NLMSG_HDRLEN: usize = 16;
pub(super) const NLMSG_ERROR: u16 = 2;
pub(super) const NLMSG_DONE: u16 = 3;
pub(super) const SOCK_DIAG_BY_FAMILY: u16 = 20;
pub(super) const SOCK_DESTROY: u16 = 21;
pub(super) const NLM_F_REQUEST: u16 = 1;
pub(super) const NLM_F_ACK: u16 = 4;
pub(super) const NLM_F_DUMP: u16 = 0x300;
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_CGROUP_ID: u16 = 21;
const IPPROTO_TCP: u8 = 6;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
/// `inet_diag_sockid`: ports, two 16-byte addresses, interface, cookie.
pub(super) const SOCKID_LEN: usize = 48;
const REQ_LEN: usize = 8 + SOCKID_LEN;
const MSG_LEN: usize = 4 + SOCKID_LEN + 20;

/// A cgroup v2 id: the inode number of its directory, as `INET_DIAG_CGROUP_ID` reports a
/// socket's (`sock_cgroup_id()`, <https://github.com/torvalds/linux/blob/v6.18/include/linux/cgroup.h>)
/// and `stat(2)` a directory's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct CgroupId(pub u64);

impl std::fmt::Display for CgroupId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One socket as `sock_diag` reports it.
#[derive(Clone, Debug)]
pub(crate) struct DiagSock {
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub state: u8,
    pub cookie: u64,
    /// 0 when no process holds the socket any more (closed or its owner died: orphaned).
    pub inode: u32,
    /// The socket's owner (`sock_i_uid`: the creator's fsuid, kept when it drops privileges).
    pub uid: u32,
    /// Bytes written and not yet acknowledged (`idiag_wqueue`: `write_seq - snd_una`, what
    /// `ss` shows as Send-Q).
    pub send_q: u32,
    pub cgroup_id: Option<CgroupId>,
    pub info: Option<TcpInfo>,
}

impl DiagSock {
    /// Bytes sent and not yet acknowledged (`snd_nxt - snd_una`, as the probe's record
    /// counts them): Send-Q less what is not sent yet.
    #[must_use]
    pub(crate) fn unacked_bytes(&self) -> u32 {
        self.send_q
            .saturating_sub(self.info.map_or(0, |i| i.notsent_bytes))
    }
}

fn addr_bytes(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v4.octets());
            b
        }
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// An `inet_diag_req_v2` naming one socket exactly (or, with `None`, a dump filter).
pub(super) fn request(
    family: u8,
    states: u32,
    sock: Option<(SocketAddr, SocketAddr, u64)>,
) -> [u8; REQ_LEN] {
    let mut r = [0u8; REQ_LEN];
    r[0] = family;
    r[1] = IPPROTO_TCP;
    r[2] = 1 << (INET_DIAG_INFO - 1); // ask for tcp_info
    r[4..8].copy_from_slice(&states.to_ne_bytes());
    if let Some((local, peer, cookie)) = sock {
        r[8..10].copy_from_slice(&local.port().to_be_bytes());
        r[10..12].copy_from_slice(&peer.port().to_be_bytes());
        r[12..28].copy_from_slice(&addr_bytes(local.ip()));
        r[28..44].copy_from_slice(&addr_bytes(peer.ip()));
        #[allow(
            clippy::cast_possible_truncation,
            reason = "the cookie is split into two u32s"
        )]
        let (lo, hi) = (cookie as u32, (cookie >> 32) as u32);
        r[48..52].copy_from_slice(&lo.to_ne_bytes());
        r[52..56].copy_from_slice(&hi.to_ne_bytes());
    }
    r
}

pub(super) fn family_of(addr: &SocketAddr) -> u8 {
    if addr.is_ipv4() { AF_INET } else { AF_INET6 }
}

fn ip_at(family: u8, b: &[u8]) -> IpAddr {
    if family == AF_INET {
        IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
    } else {
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[..16]);
        IpAddr::V6(Ipv6Addr::from(a))
    }
}

/// Decode an `inet_diag_msg` and its attributes. `None` when the message is truncated.
pub(super) fn parse_msg(p: &[u8]) -> Option<DiagSock> {
    if p.len() < MSG_LEN {
        return None;
    }
    let (family, state) = (p[0], p[1]);
    let id = &p[4..4 + SOCKID_LEN];
    let sport = u16::from_be_bytes([id[0], id[1]]);
    let dport = u16::from_be_bytes([id[2], id[3]]);
    let word = |o: usize| u32::from_ne_bytes([p[o], p[o + 1], p[o + 2], p[o + 3]]);
    let cookie = u64::from(word(4 + 40)) | (u64::from(word(4 + 44)) << 32);
    let mut sock = DiagSock {
        local: SocketAddr::new(ip_at(family, &id[4..20]), sport),
        peer: SocketAddr::new(ip_at(family, &id[20..36]), dport),
        state,
        cookie,
        inode: word(MSG_LEN - 4),
        uid: word(MSG_LEN - 8),
        send_q: word(MSG_LEN - 12),
        cgroup_id: None,
        info: None,
    };
    let mut rest = &p[MSG_LEN..];
    while rest.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let kind = u16::from_ne_bytes([rest[2], rest[3]]);
        if len < 4 || len > rest.len() {
            break;
        }
        let payload = &rest[4..len];
        match kind {
            INET_DIAG_INFO => sock.info = Some(tcp_info::parse(payload)),
            INET_DIAG_CGROUP_ID if payload.len() >= 8 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(&payload[..8]);
                sock.cgroup_id = Some(CgroupId(u64::from_ne_bytes(a)));
            }
            _ => {}
        }
        rest = &rest[(len + 3) & !3..];
    }
    Some(sock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_response_round_trip_the_socket_identity() {
        let local: SocketAddr = "198.51.100.1:40000".parse().unwrap();
        let peer: SocketAddr = "198.51.100.2:6443".parse().unwrap();
        let req = request(AF_INET, 1 << 1, Some((local, peer, 0x1_0000_0002)));
        // An inet_diag_msg carries the same sockid at offset 4 that a request has at 8.
        // Then expires, rqueue, wqueue, uid, inode.
        let mut msg = vec![AF_INET, 1, 0, 0];
        msg.extend_from_slice(&req[8..]);
        for word in [0u32, 0, 120, 0, 4242] {
            msg.extend_from_slice(&word.to_ne_bytes());
        }
        let s = parse_msg(&msg).unwrap();
        assert_eq!(
            (s.local, s.peer, s.cookie, s.state),
            (local, peer, 0x1_0000_0002, 1)
        );
        assert_eq!((s.send_q, s.inode, s.unacked_bytes()), (120, 4242, 120));
    }

    #[test]
    fn truncated_messages_are_rejected() {
        assert!(parse_msg(&[0u8; 10]).is_none());
    }
}
