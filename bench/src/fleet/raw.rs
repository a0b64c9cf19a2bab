//! What one scenario produced, as the servers, dnsmasq and the agents saw it: `run` records
//! it, the tally, the goals, the charts and the report read it. Times are `CLOCK_MONOTONIC`
//! ms; `secs` turns them into seconds for rates and printing.

use super::scenario::Scenario;

/// What one scenario produced, in `CLOCK_MONOTONIC` ms and node indexes.
pub(super) struct Raw {
    pub scenario: Scenario,
    pub t0: u64,
    pub second: Option<u64>,
    pub end: u64,
    /// Connections accepted that never carried a request: the agents' probes of the
    /// endpoint (a connect, then a close): (ms, node).
    pub probes: Vec<(u64, usize)>,
    /// Client connections: the first request of each (node, port), when it came.
    pub client_conns: Vec<(u64, usize)>,
    /// Heartbeats received: (ms, node).
    pub heartbeats: Vec<(u64, usize)>,
    /// Watches (re-lists) opened: (ms, node).
    pub watches: Vec<(u64, usize)>,
    /// The agents' kills: (ms, node).
    pub kills: Vec<(u64, usize)>,
    /// DNS queries dnsmasq logged from each node during the window.
    pub dns_queries: Vec<usize>,
    /// The dig script's client restarts per node.
    pub restarts: Vec<usize>,
    /// Per node, the API server it was on when the first step came.
    pub on_server: Vec<Option<usize>>,
    /// Nodes that never sent a heartbeat before the fault (a broken start, reported).
    pub never_started: usize,
}

/// Milliseconds as seconds, for rates and printing.
#[expect(clippy::cast_precision_loss, reason = "durations of minutes")]
pub(super) fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}
