//! The endpoint-client target: `ENDPOINT_PEERS` holds every address a new connection to the
//! API endpoint may use (the current answer's, and those within `--orphan-grace` of leaving
//! it) once it is armed (`endpoint/arming.rs`: at once for the first answer and literals,
//! after the answers held it for `SETTLE` for a later one), so `sock_ops` can select such
//! sockets at ESTABLISHED whoever owns them. Kept in step with the DNS answers at every
//! sweep; an address armed late is also searched for among the sockets that already exist
//! (a client may have resolved before the agent, or while the address settled).

use std::{
    collections::BTreeSet,
    net::SocketAddr,
    time::{Duration, Instant},
};

use crate::{
    endpoint::{Armed, ArmingRuns, Endpoints, SETTLE},
    kernel::probe::Probe,
};

#[derive(Default)]
pub(crate) struct PeerSync {
    installed: BTreeSet<SocketAddr>,
    arming: ArmingRuns,
}

impl PeerSync {
    /// The endpoint peers armed now.
    #[must_use]
    pub(crate) fn installed(&self) -> &BTreeSet<SocketAddr> {
        &self.installed
    }

    /// Update the map; returns the peers added now, for the caller to adopt their sockets.
    pub(crate) fn sync(
        &mut self,
        probe: &mut Probe,
        endpoints: &Endpoints,
        grace: Duration,
    ) -> Vec<SocketAddr> {
        let Armed {
            armed: want,
            settling,
        } = self
            .arming
            .step(&endpoints.arming_candidates(grace), Instant::now());
        for peer in settling {
            tracing::info!(event = "endpoint-client-settling", peer = %peer, settle_s = SETTLE.as_secs(),
                "{peer} joined the endpoint's answers: other processes' connections to it are watched once the answers have held it for {} s (a shorter DNS change arms nothing)", SETTLE.as_secs());
        }
        for gone in self.installed.difference(&want) {
            probe.remove_endpoint_peer(*gone);
        }
        let mut added = Vec::new();
        let mut failed = BTreeSet::new();
        for peer in want.difference(&self.installed) {
            match probe.add_endpoint_peer(*peer) {
                Ok(()) => added.push(*peer),
                Err(e) => {
                    // Not installed, so the next sweep tries again.
                    tracing::error!(peer = %peer, error = %format!("{e:#}"), "cannot watch the clients of an endpoint address");
                    failed.insert(*peer);
                }
            }
        }
        let changed = !added.is_empty() || self.installed.difference(&want).next().is_some();
        self.installed = want.difference(&failed).copied().collect();
        if changed {
            tracing::info!(event = "endpoint-clients", peers = ?self.installed, "endpoint-client targets updated");
        }
        added
    }
}
