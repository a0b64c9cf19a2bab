//! An API server one router away, as on most nodes: the lab's server namespace forwards
//! between the bridge (198.51.100.0/24) and a network of its own (203.0.113.0/24) where a
//! `lab-server` listens at `ROUTED_API`. A packet that leaves the client with a TTL of 1 dies
//! at the router (ICMP time exceeded, which TCP treats as a soft error and retransmits
//! through): what any local user can do to its own connections with `IP_TTL`, no privilege
//! needed. The fault table still sees every flow (the router is behind the bridge).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::infra::lab::{Lab, SERVER_PORT, SERVER_V4};
use crate::infra::netns::NetNs;
use crate::infra::paths::fixture;
use crate::infra::proc::Proc;

/// The routed API server's address.
pub const ROUTED_API: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 2);
const ROUTER_SIDE: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

/// The far network and its server. Fields drop in order: the server, then its namespace
/// (which removes the veth); the lab's routes go with the lab's namespaces.
pub struct RoutedApi {
    pub server: Proc,
    pub far: NetNs,
}

impl RoutedApi {
    /// Builds the far network behind the lab's server namespace and starts `lab-server`
    /// there.
    ///
    /// # Errors
    /// When a link, route or the server cannot be set up.
    pub fn new(lab: &Lab) -> Result<Self> {
        let far = NetNs::new("far")?;
        lab.server.ip(&[
            "link",
            "add",
            "rt0",
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            far.name(),
        ])?;
        lab.server
            .ip(&["addr", "add", &format!("{ROUTER_SIDE}/24"), "dev", "rt0"])?;
        lab.server.ip(&["link", "set", "rt0", "up"])?;
        lab.server
            .exec("sysctl", &["-qw", "net.ipv4.ip_forward=1"])?;
        far.ip(&["addr", "add", &format!("{ROUTED_API}/24"), "dev", "eth0"])?;
        far.ip(&["link", "set", "eth0", "up"])?;
        far.ip(&["route", "add", "default", "via", &ROUTER_SIDE.to_string()])?;
        lab.client.ip(&[
            "route",
            "add",
            "203.0.113.0/24",
            "via",
            &SERVER_V4.to_string(),
        ])?;
        let bin = fixture("lab-server")?;
        let listen = Self::addr().to_string();
        let cmd = far.command(bin.to_str().context("path")?, &["--listen", &listen]);
        let mut server = Proc::spawn("lab-server (routed)", cmd)?;
        server.wait_stdout(
            "the routed server to listen",
            Duration::from_secs(10),
            |l| l.contains("\"listening\""),
        )?;
        Ok(Self { server, far })
    }

    /// Where clients dial it.
    #[must_use]
    pub fn addr() -> SocketAddr {
        SocketAddr::new(ROUTED_API.into(), SERVER_PORT)
    }
}
