//! The lab topology: client ns <-veth-> wire ns (bridge) <-veth-> server ns, and on demand
//! more hosts on the same bridge (`Lab::add_host`: more API servers, a DNS server).
//!
//! Each lab has its own namespaces, so parallel labs reuse the same documentation
//! addresses without colliding, and nothing is created in the root namespace: the veth
//! pairs are made inside the namespaces directly.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::Result;

use crate::infra::netns::NetNs;

pub const CLIENT_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
pub const SERVER_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);
pub const CLIENT_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
pub const SERVER_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
/// The API server's port, one of the agent's watched ports.
pub const SERVER_PORT: u16 = 6443;
/// The nft table (bridge family) in the wire namespace that holds the faults (`nft.rs`).
pub(crate) const FAULT_TABLE: &str = "lifeline_lab";

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
        lab.wire.ip(&["link", "add", "br0", "type", "bridge"])?;
        // The bridge and its ports only switch frames: no addresses, no IPv6 DAD chatter.
        lab.wire
            .exec("sysctl", &["-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
        lab.wire.ip(&["link", "set", "br0", "up"])?;
        for (host, port, v4, v6) in [
            (&lab.client, "vc", CLIENT_V4, CLIENT_V6),
            (&lab.server, "vs", SERVER_V4, SERVER_V6),
        ] {
            lab.attach(host, port, v4, v6)?;
        }
        // The empty table and forward chain the faults are added to.
        let chain = "{ type filter hook forward priority 0; policy accept; }";
        lab.wire
            .exec("nft", &["add", "table", "bridge", FAULT_TABLE])?;
        lab.wire.exec(
            "nft",
            &["add", "chain", "bridge", FAULT_TABLE, "forward", chain],
        )?;
        Ok(lab)
    }

    /// One more host on the bridge (another API server, the DNS server): its own namespace
    /// with `eth0` at `v4`/24 and `v6`/64. `role` names it and its bridge port (`v<role>`), so
    /// it must be short (at most 8 characters) and unique within this lab. The caller owns the
    /// namespace; dropping it (before or after the lab) removes the host and its veth.
    ///
    /// # Errors
    /// When the namespace, link or addresses cannot be set up.
    pub fn add_host(&self, role: &str, v4: Ipv4Addr, v6: Ipv6Addr) -> Result<NetNs> {
        anyhow::ensure!(
            role.len() <= 8 && role.chars().all(|c| c.is_ascii_alphanumeric()),
            "host role {role:?}: at most 8 letters or digits"
        );
        let host = NetNs::new(role)?;
        self.attach(&host, &format!("v{role}"), v4, v6)?;
        Ok(host)
    }

    /// A veth from `host`'s `eth0` to bridge port `port` in the wire namespace, addresses up.
    fn attach(&self, host: &NetNs, port: &str, v4: Ipv4Addr, v6: Ipv6Addr) -> Result<()> {
        let w = self.wire.name();
        host.ip(&[
            "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", w,
        ])?;
        self.wire
            .ip(&["link", "set", port, "master", "br0", "up"])?;
        host.ip(&["addr", "add", &format!("{v4}/24"), "dev", "eth0"])?;
        // nodad: usable at once instead of after ~1 s of duplicate address detection.
        host.ip(&["addr", "add", &format!("{v6}/64"), "dev", "eth0", "nodad"])?;
        host.ip(&["link", "set", "eth0", "up"])?;
        Ok(())
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
