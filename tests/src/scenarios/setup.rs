//! The standard scenario setup: a lab, a watched cgroup and a running server.

use anyhow::Result;

use crate::fixtures::client::{Client, start_server};
use crate::infra::cgroup::Cgroup;
use crate::infra::lab::Lab;
use crate::infra::proc::Proc;

/// A lab with a running server and an (empty) watched cgroup. Fields drop top to bottom:
/// server, then cgroup, then the namespaces.
pub struct Setup {
    pub server: Proc,
    pub cgroup: Cgroup,
    pub lab: Lab,
}

impl Setup {
    /// # Errors
    /// When any part of the lab cannot be built.
    pub fn new() -> Result<Self> {
        let lab = Lab::new()?;
        let cgroup = Cgroup::new()?;
        let server = start_server(&lab, &[])?;
        Ok(Self {
            server,
            cgroup,
            lab,
        })
    }

    /// A heartbeat client (1 s) to the server's IPv4 address, in the watched cgroup.
    ///
    /// # Errors
    /// When it cannot start or connect.
    pub fn heartbeat_client(&self, extra: &[&str]) -> Result<Client> {
        self.heartbeat_client_to(false, extra)
    }

    /// A heartbeat client (1 s) to the server's IPv4 or IPv6 address, in the watched cgroup.
    ///
    /// # Errors
    /// When it cannot start or connect.
    pub fn heartbeat_client_to(&self, v6: bool, extra: &[&str]) -> Result<Client> {
        let peer = Lab::server_addr(v6).to_string();
        let mut args = vec!["--peer", &peer, "heartbeat", "--interval", "1s"];
        args.extend_from_slice(extra);
        Client::start(&self.lab, Some(&self.cgroup), &args)
    }
}
