//! Faults on the wire: nft rules in the bridge family, forward hook, in the lab's own wire
//! namespace. Neither end sees a rule, so a drop looks like a silently retired load-balancer
//! address: no FIN, no RST, no ICMP. (The kernel here has no netem; loss is `numgen`.)

use std::net::IpAddr;

use anyhow::{Context, Result};

use crate::infra::lab::{FAULT_TABLE, Lab};

/// Rules added for one fault, by nft handle, so the fault can be lifted again.
#[derive(Debug)]
#[must_use = "keep the Fault to lift it with Lab::heal"]
pub struct Fault {
    handles: Vec<u64>,
    pub description: String,
}

impl Lab {
    /// Drops every packet to and from `addr` (the peer is gone without a word).
    ///
    /// # Errors
    /// When nft refuses a rule.
    pub fn blackhole(&self, addr: IpAddr) -> Result<Fault> {
        let fam = if addr.is_ipv4() { "ip" } else { "ip6" };
        let a = addr.to_string();
        self.fault(
            &format!("black hole for {a}"),
            &[
                &[fam, "daddr", &a, "counter", "drop"],
                &[fam, "saddr", &a, "counter", "drop"],
            ],
        )
    }

    /// Drops only the packets of the TCP flow whose client port is `client_port`: the balancer
    /// forgot this one flow, while new connections to the same peer still work.
    ///
    /// # Errors
    /// When nft refuses a rule.
    pub fn blackhole_flow(&self, client_port: u16) -> Result<Fault> {
        let p = client_port.to_string();
        self.fault(
            &format!("black hole for the flow from client port {p}"),
            &[
                &["tcp", "sport", &p, "counter", "drop"],
                &["tcp", "dport", &p, "counter", "drop"],
            ],
        )
    }

    /// Counts (never drops) the packets of the flow from client port `client_port`: the
    /// first rule counts client -> server, the second server -> client (`Lab::rule_counts`).
    ///
    /// # Errors
    /// When nft refuses a rule.
    pub fn count_flow(&self, client_port: u16) -> Result<Fault> {
        let p = client_port.to_string();
        self.fault(
            &format!("packet counters for the flow from client port {p}"),
            &[
                &["tcp", "sport", &p, "counter"],
                &["tcp", "dport", &p, "counter"],
            ],
        )
    }

    /// Random loss of `percent` % on every forwarded packet, both directions.
    ///
    /// # Errors
    /// When nft refuses the rule.
    pub fn loss(&self, percent: u8) -> Result<Fault> {
        let n = percent.to_string();
        self.fault(
            &format!("{n}% loss"),
            &[&[
                "counter", "numgen", "random", "mod", "100", "<", &n, "counter", "drop",
            ]],
        )
    }

    /// Random loss of `percent` % on one TCP flow only, both directions.
    ///
    /// # Errors
    /// When nft refuses a rule.
    pub fn loss_flow(&self, client_port: u16, percent: u8) -> Result<Fault> {
        let (p, n) = (client_port.to_string(), percent.to_string());
        // Two counters: every packet of the flow, then the ones dropped.
        let rnd = [
            "counter", "numgen", "random", "mod", "100", "<", &n, "counter", "drop",
        ];
        let sport: Vec<&str> = ["tcp", "sport", &p].iter().copied().chain(rnd).collect();
        let dport: Vec<&str> = ["tcp", "dport", &p].iter().copied().chain(rnd).collect();
        self.fault(&format!("{n}% loss on client port {p}"), &[&sport, &dport])
    }

    /// Lifts a fault: deletes its rules.
    ///
    /// # Errors
    /// When nft cannot delete a rule.
    pub fn heal(&self, fault: &Fault) -> Result<()> {
        for h in &fault.handles {
            let h = h.to_string();
            self.wire.exec(
                "nft",
                &[
                    "delete",
                    "rule",
                    "bridge",
                    FAULT_TABLE,
                    "forward",
                    "handle",
                    &h,
                ],
            )?;
        }
        Ok(())
    }

    /// Packets the fault's rules saw and dropped so far: (seen, dropped). Proves a fault
    /// really hit the traffic it was meant for.
    ///
    /// # Errors
    /// When nft cannot list the table.
    pub fn counters(&self, fault: &Fault) -> Result<(u64, u64)> {
        let (mut seen, mut dropped) = (0, 0);
        for counts in self.rule_counts(fault)? {
            seen += counts.first().copied().unwrap_or(0);
            dropped += counts.last().copied().unwrap_or(0);
        }
        Ok((seen, dropped))
    }

    /// The packet counts of each of the fault's rules, in the order they were added (one
    /// entry per `counter` statement in the rule).
    ///
    /// # Errors
    /// When nft cannot list the table.
    pub fn rule_counts(&self, fault: &Fault) -> Result<Vec<Vec<u64>>> {
        let listing = self
            .wire
            .exec("nft", &["-a", "list", "table", "bridge", FAULT_TABLE])?;
        let mut by_handle = std::collections::HashMap::new();
        for line in listing.lines() {
            let Some((rule, handle)) = line.rsplit_once("# handle ") else {
                continue;
            };
            if !handle
                .trim()
                .parse()
                .is_ok_and(|h: u64| fault.handles.contains(&h))
            {
                continue;
            }
            let words: Vec<&str> = rule.split_whitespace().collect();
            let counts: Vec<u64> = words
                .windows(3)
                .filter(|w| w[0] == "counter" && w[1] == "packets")
                .filter_map(|w| w[2].parse().ok())
                .collect();
            if let Ok(h) = handle.trim().parse::<u64>() {
                by_handle.insert(h, counts);
            }
        }
        Ok(fault
            .handles
            .iter()
            .map(|h| by_handle.remove(h).unwrap_or_default())
            .collect())
    }

    /// The current rule set of the wire namespace, for diagnostics.
    #[must_use]
    pub fn nft_ruleset(&self) -> String {
        self.wire
            .exec("nft", &["-a", "list", "table", "bridge", FAULT_TABLE])
            .unwrap_or_else(|e| format!("{e:#}"))
    }

    pub(crate) fn fault(&self, description: &str, rules: &[&[&str]]) -> Result<Fault> {
        let mut fault = Fault {
            handles: Vec::new(),
            description: description.to_owned(),
        };
        for rule in rules {
            // -e -a echoes the rule with its handle: "add rule ... # handle 7".
            let mut args = vec!["-e", "-a", "add", "rule", "bridge", FAULT_TABLE, "forward"];
            args.extend_from_slice(rule);
            let out = self.wire.exec("nft", &args)?;
            let handle = out
                .lines()
                .find_map(|l| {
                    l.rsplit_once("# handle ")
                        .and_then(|(_, h)| h.trim().parse().ok())
                })
                .with_context(|| format!("no handle in nft output: {out}"))?;
            fault.handles.push(handle);
        }
        Ok(fault)
    }
}
