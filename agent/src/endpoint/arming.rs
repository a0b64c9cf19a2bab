//! Which endpoint addresses arm the endpoint-client watch (`ENDPOINT_PEERS`: every node
//! process's connection to them is recorded and judged, and, once the address has left the
//! answers for the grace, migrated). A DNS answer is anyone's who can spoof it, and an
//! address another service of the node uses on the same port (a registry, a webhook on 443)
//! would have that service's connections armed and, after the spoof, killed as orphans. So
//! an address a later answer brings arms the watch only once the answers have held it for
//! `SETTLE`, with no absence of `--orphan-grace` or more in between (a server answering
//! with rotating subsets shows every address again well within that, as the orphan rule
//! already assumes); a spoof shorter than `SETTLE` arms nothing, and a DNS outage after it
//! does not stretch it (the time counted ends at the last answer that held the address).
//! Trusted at once: the first answer (what the node used before lifeline could compare),
//! IP literals (`--endpoint`, the kubeconfig's, the proxy's list). Kubelet's own sockets are
//! watched by its cgroup whatever the peer; an address armed late has its existing
//! connections adopted then (`watch/peers.rs`).

use std::{
    collections::{BTreeSet, HashMap},
    net::SocketAddr,
    sync::PoisonError,
    time::{Duration, Instant},
};

use super::Endpoints;

/// How long the answers must hold a new address before its other clients are armed.
pub(crate) const SETTLE: Duration = Duration::from_mins(2);

/// One address a new connection to an endpoint may use (`EndpointSet::within_grace`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub addr: SocketAddr,
    /// When a successful answer last held it.
    pub held_at: Instant,
    /// Trusted at once (the first answer, an IP literal).
    pub at_once: bool,
}

impl Endpoints {
    /// Every address within the grace, with what arming needs to know of it.
    #[must_use]
    pub(crate) fn arming_candidates(&self, grace: Duration) -> Vec<Candidate> {
        let mut out = Vec::new();
        for s in &self.sets() {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            out.extend(s.arming(grace).filter(|(ip, _, _)| !ip.is_loopback()).map(
                |(ip, held_at, at_once)| Candidate {
                    addr: SocketAddr::new(ip, s.port),
                    held_at,
                    at_once,
                },
            ));
        }
        out
    }
}

/// The runs of the addresses within the grace: since when each has been (the sweep that
/// first saw it; a run ends when the address leaves the grace).
#[derive(Default)]
pub(crate) struct ArmingRuns {
    runs: HashMap<SocketAddr, Instant>,
}

/// One step's answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Armed {
    /// The addresses to arm now.
    pub armed: BTreeSet<SocketAddr>,
    /// Addresses whose run began now and that wait for `SETTLE` (to be logged once).
    pub settling: Vec<SocketAddr>,
}

impl ArmingRuns {
    /// Called every sweep with every candidate.
    pub(crate) fn step(&mut self, candidates: &[Candidate], now: Instant) -> Armed {
        let mut out = Armed::default();
        self.runs
            .retain(|addr, _| candidates.iter().any(|c| c.addr == *addr));
        for c in candidates {
            let start = *self.runs.entry(c.addr).or_insert_with(|| {
                if !c.at_once {
                    out.settling.push(c.addr);
                }
                now
            });
            if c.at_once || c.held_at.saturating_duration_since(start) >= SETTLE {
                out.armed.insert(c.addr);
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "arming_tests.rs"]
mod tests;
