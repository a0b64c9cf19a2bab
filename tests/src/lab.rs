//! The lab topology: client ns <-veth-> wire ns (bridge) <-veth-> server ns.
//!
//! Each lab has its own namespaces, so parallel labs reuse the same documentation
//! addresses without colliding, and nothing is created in the root namespace: the veth
//! pairs are made inside the namespaces directly.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::Result;

use crate::netns::NetNs;

pub const CLIENT_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
pub const SERVER_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);
pub const CLIENT_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
pub const SERVER_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
/// The API server's port, one of the agent's watched ports.
pub const SERVER_PORT: u16 = 6443;

/// Three namespaces wired together. Fields drop in declaration order; each `NetNs` kills its
/// processes and deletes itself, which also removes the veths and the bridge.
pub struct Lab {
    pub client: NetNs,
    pub server: NetNs,
    pub wire: NetNs,
}

impl Lab {
    /// Builds the topology and the (empty) nft table for faults.
    ///
    /// # Errors
    /// When a namespace, link, address or the nft table cannot be set up.
    pub fn new() -> Result<Self> {
        let lab = Self {
            client: NetNs::new("c")?,
            server: NetNs::new("s")?,
            wire: NetNs::new("w")?,
        };
        let w = lab.wire.name();
        lab.wire.ip(&["link", "add", "br0", "type", "bridge"])?;
        // The bridge and its ports only switch frames: no addresses, no IPv6 DAD chatter.
        lab.wire
            .exec("sysctl", &["-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
        lab.wire.ip(&["link", "set", "br0", "up"])?;
        for (host, port, v4, v6) in [
            (&lab.client, "vc", CLIENT_V4, CLIENT_V6),
            (&lab.server, "vs", SERVER_V4, SERVER_V6),
        ] {
            host.ip(&[
                "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", w,
            ])?;
            lab.wire.ip(&["link", "set", port, "master", "br0", "up"])?;
            host.ip(&["addr", "add", &format!("{v4}/24"), "dev", "eth0"])?;
            // nodad: usable at once instead of after ~1 s of duplicate address detection.
            host.ip(&["addr", "add", &format!("{v6}/64"), "dev", "eth0", "nodad"])?;
            host.ip(&["link", "set", "eth0", "up"])?;
        }
        crate::nft::init(&lab.wire)?;
        Ok(lab)
    }

    /// The server's listening address in the given family.
    #[must_use]
    pub fn server_addr(v6: bool) -> SocketAddr {
        let ip = if v6 {
            IpAddr::V6(SERVER_V6)
        } else {
            IpAddr::V4(SERVER_V4)
        };
        SocketAddr::new(ip, SERVER_PORT)
    }
}
