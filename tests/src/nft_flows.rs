//! A balancer that forgets the flows of one address at once: every TCP flow that exists now
//! (given as the client ends, address and port) is dropped in both directions, while new
//! connections to the same address still work. One rule per direction with an anonymous set
//! of `address . port` pairs, so a fleet's hundred flows are two rules, added in one step.

use std::net::SocketAddrV4;

use anyhow::{Result, ensure};

use crate::lab::Lab;
use crate::nft::Fault;

impl Lab {
    /// Drops every packet of the TCP flows whose client ends are `clients` (IPv4).
    ///
    /// # Errors
    /// When `clients` is empty or nft refuses a rule.
    pub fn blackhole_flows(&self, clients: &[SocketAddrV4]) -> Result<Fault> {
        ensure!(!clients.is_empty(), "no flows to black-hole");
        let pairs: Vec<String> = clients
            .iter()
            .map(|c| format!("{} . {}", c.ip(), c.port()))
            .collect();
        let set = format!("{{ {} }}", pairs.join(", "));
        self.fault(
            &format!("black hole for {} flows", clients.len()),
            &[
                &["ip", "saddr", ".", "tcp", "sport", &set, "counter", "drop"],
                &["ip", "daddr", ".", "tcp", "dport", &set, "counter", "drop"],
            ],
        )
    }
}
