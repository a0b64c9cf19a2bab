//! Counting an idle flow's keepalive probes by size on the wire: a bare probe (an ACK with
//! TCP timestamps: IPv4 length 52) and one that carries the fast probes' octet (53). Added
//! before the flow's black hole, so they count what the black hole then drops.

use anyhow::Result;

use crate::infra::lab::Lab;
use crate::infra::nft::Fault;

impl Lab {
    /// Counters (never drops) for the client's packets of the flow from `client_port`:
    /// `rule_counts` gives `[[bare], [with an octet]]`.
    ///
    /// # Errors
    /// When nft refuses a rule.
    pub fn count_probe_sizes(&self, client_port: u16) -> Result<Fault> {
        let p = client_port.to_string();
        self.fault(
            &format!("probe sizes of the flow from client port {p}"),
            &[
                &["tcp", "sport", &p, "ip", "length", "52", "counter"],
                &["tcp", "sport", &p, "ip", "length", "53", "counter"],
            ],
        )
    }
}
