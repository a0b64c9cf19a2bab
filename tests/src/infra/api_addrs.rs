//! The endpoint lab's names and addresses: three API servers on the basic lab's bridge (api1
//! is the basic lab's server host) and the DNS server that names them. The lab that builds
//! the hosts, the dnsmasq that serves the name, the tests and the bench all read them here.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::infra::lab::{SERVER_V4, SERVER_V6};

/// The API server's name as the client and the agent know it.
pub const API_NAME: &str = "api.lab.test";
/// `--endpoint` for the agent, and the `endpoint` field of its events.
pub const ENDPOINT: &str = "api.lab.test:6443";
pub const API_V4: [Ipv4Addr; 3] = [
    SERVER_V4,
    Ipv4Addr::new(198, 51, 100, 3),
    Ipv4Addr::new(198, 51, 100, 4),
];
pub const API_V6: [Ipv6Addr; 3] = [
    SERVER_V6,
    Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 3),
    Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 4),
];
pub const DNS_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 53);
pub const DNS_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x53);

/// API server `n` (1, 2 or 3) in the given family.
///
/// # Panics
/// When `n` is not 1, 2 or 3.
#[must_use]
pub fn api(n: usize, v6: bool) -> IpAddr {
    if v6 {
        API_V6[n - 1].into()
    } else {
        API_V4[n - 1].into()
    }
}
