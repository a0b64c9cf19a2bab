//! The servers' own counters (report/gate.rs): clients refused past the cap, dropped at
//! their deadline, failed accepts, by server. Both servers' series exist from the start (at
//! 0), so a scrape shows the bound before anyone hits it.

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family},
    registry::Registry,
};

use crate::report::gate::Turned;

/// The metrics endpoint (`--metrics-addr`).
pub(crate) const METRICS: &str = "metrics";
/// The status socket (`--status-socket`).
pub(crate) const STATUS: &str = "status";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabel {
    server: String,
}

#[derive(Clone, Default)]
pub(crate) struct ServerCounters {
    refused: Family<ServerLabel, Counter>,
    timeouts: Family<ServerLabel, Counter>,
    accept_errors: Family<ServerLabel, Counter>,
}

impl ServerCounters {
    /// Registers the three families, with both servers' series.
    pub(crate) fn register(&self, r: &mut Registry) {
        r.register(
            "server_refused",
            "Clients closed unserved because the server was serving its maximum at once",
            self.refused.clone(),
        );
        r.register(
            "server_timeouts",
            "Clients dropped at their deadline (too slow to send the request or read the answer)",
            self.timeouts.clone(),
        );
        r.register(
            "server_accept_errors",
            "Failed accepts (e.g. out of descriptors); the server pauses and accepts again",
            self.accept_errors.clone(),
        );
        for server in [METRICS, STATUS] {
            drop(self.turned(server));
        }
    }

    /// Where `server` counts (the handles share the registered series).
    #[must_use]
    pub(crate) fn turned(&self, server: &str) -> Turned {
        let label = ServerLabel {
            server: server.to_owned(),
        };
        Turned {
            refused: self.refused.get_or_create(&label).clone(),
            timeouts: self.timeouts.get_or_create(&label).clone(),
            accept_errors: self.accept_errors.get_or_create(&label).clone(),
        }
    }
}
