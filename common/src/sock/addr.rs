//! Address decoding of [`SockState`]: pure, so the judge reads a record's peer without the
//! map access (`user`) that brings in aya.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::SockState;

const AF_INET6: u16 = 10;

fn ip(family: u16, raw: &[u8; 16]) -> IpAddr {
    if family == AF_INET6 {
        IpAddr::V6(Ipv6Addr::from(*raw))
    } else {
        IpAddr::V4(Ipv4Addr::new(raw[0], raw[1], raw[2], raw[3]))
    }
}

impl SockState {
    #[must_use]
    pub fn peer(&self) -> SocketAddr {
        SocketAddr::new(ip(self.family, &self.peer_addr), self.peer_port)
    }

    #[must_use]
    pub fn local(&self) -> SocketAddr {
        SocketAddr::new(ip(self.family, &self.local_addr), self.local_port)
    }

    /// The owner's `comm`, up to its first NUL; `None` when the owner is unknown.
    #[must_use]
    pub fn comm(&self) -> Option<&str> {
        let end = self
            .owner_comm
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.owner_comm.len());
        (end > 0).then(|| core::str::from_utf8(&self.owner_comm[..end]).unwrap_or("?"))
    }
}

impl SockState {
    /// A record for a socket the agent found itself (family, addresses, ports set).
    #[must_use]
    pub fn for_endpoints(local: SocketAddr, peer: SocketAddr) -> Self {
        let raw = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => {
                let mut b = [0u8; 16];
                b[..4].copy_from_slice(&v4.octets());
                b
            }
            IpAddr::V6(v6) => v6.octets(),
        };
        Self {
            family: if local.is_ipv4() { 2 } else { AF_INET6 },
            local_addr: raw(local.ip()),
            peer_addr: raw(peer.ip()),
            local_port: local.port(),
            peer_port: peer.port(),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_round_trip_for_both_families() {
        for (l, p) in [
            ("198.51.100.1:40000", "198.51.100.2:6443"),
            ("[2001:db8::1]:40000", "[2001:db8::2]:6443"),
        ] {
            let (l, p): (SocketAddr, SocketAddr) = (l.parse().unwrap(), p.parse().unwrap());
            let s = SockState::for_endpoints(l, p);
            assert_eq!((s.local(), s.peer()), (l, p));
        }
    }
}
