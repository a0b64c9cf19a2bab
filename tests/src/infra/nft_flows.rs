//! A balancer that forgets the flows of one address at once: every TCP flow that exists now
//! between `server` and the given client ends (address and port) is dropped in both
//! directions, while new connections still work. The server is part of the match: a client
//! may reuse a dropped flow's port for a new connection to another address. One rule per direction with an anonymous set
//! of `address . port` pairs, so a fleet's hundred flows are two rules, added in one step.

use std::net::{Ipv4Addr, SocketAddrV4};

use anyhow::{Result, ensure};

use crate::infra::lab::Lab;
use crate::infra::nft::Fault;

impl Lab {
    /// Drops every packet of the TCP flows between `server` and the client ends `clients`.
    ///
    /// # Errors
    /// When `clients` is empty or nft refuses a rule.
    pub fn blackhole_flows(&self, server: Ipv4Addr, clients: &[SocketAddrV4]) -> Result<Fault> {
        ensure!(!clients.is_empty(), "no flows to black-hole");
        let pairs: Vec<String> = clients
            .iter()
            .map(|c| format!("{} . {}", c.ip(), c.port()))
            .collect();
        let set = format!("{{ {} }}", pairs.join(", "));
        let server = server.to_string();
        self.fault(
            &format!("black hole for {} flows", clients.len()),
            &[
                &[
                    "ip", "daddr", &server, "ip", "saddr", ".", "tcp", "sport", &set, "counter",
                    "drop",
                ],
                &[
                    "ip", "saddr", &server, "ip", "daddr", ".", "tcp", "dport", &set, "counter",
                    "drop",
                ],
            ],
        )
    }
}
