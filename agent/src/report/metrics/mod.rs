//! Prometheus metrics (prometheus-client, `OpenMetrics` text), as one cheap clonable handle
//! made once by `run`. The decision counters (`act::Counts`) are fed, as typed values, by
//! the code that logs each decision event, right beside that event; the DNS failures by the
//! endpoint refreshers through their own counter; the socket gauges and the probe's counters
//! follow the daemon's status snapshots; the servers' refusals through their gates.

mod fast;
pub(crate) mod http;
pub(crate) mod probe;
pub(crate) mod servers;

use std::{collections::HashSet, sync::Arc};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::{
    act::Counts,
    report::{
        gate::Gate,
        metrics::{fast::FastGauge, probe::ProbeCounters, servers::ServerCounters},
        status::Snapshot,
    },
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabel {
    verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabel {
    target: String,
}

/// The registry and what feeds it; a clone is the same metrics.
#[derive(Clone)]
pub(crate) struct Metrics(Arc<Inner>);

struct Inner {
    registry: Registry,
    watched: Gauge,
    sockets: Family<VerdictLabel, Gauge>,
    target_present: Family<TargetLabel, Gauge>,
    path_down: Gauge,
    counts: Counts,
    dns_failures: Counter,
    probe: ProbeCounters,
    fast: FastGauge,
    servers: ServerCounters,
}

impl Metrics {
    #[must_use]
    pub(crate) fn new() -> Self {
        let counts = Counts::default();
        let (watched, sockets, target_present) =
            (Gauge::default(), Family::default(), Family::default());
        let (dns_failures, probe) = (Counter::default(), ProbeCounters::default());
        let mut r = Registry::with_prefix("lifeline");
        r.register(
            "watched_sockets",
            "TCP sockets the probe watches",
            watched.clone(),
        );
        r.register(
            "sockets",
            "Watched sockets by current verdict",
            sockets.clone(),
        );
        r.register(
            "target_present",
            "1 while a watch target exists (a cgroup target is 0 while its unit is stopped or not yet started)",
            target_present.clone(),
        );
        let path_down = Gauge::default();
        r.register(
            "endpoint_path_down",
            "1 while the path to the API endpoint is found down (no address accepts a connection): kills wait for its return",
            path_down.clone(),
        );
        r.register(
            "decisions",
            "Decisions on stalled sockets, by verdict, action and outcome",
            counts.decisions.clone(),
        );
        r.register(
            "kills",
            "Sockets destroyed with SOCK_DESTROY",
            counts.kills.clone(),
        );
        r.register(
            "restarts",
            "Restarts of --restart-unit, by result (restarted, failed)",
            counts.restarts.clone(),
        );
        r.register(
            "holds",
            "Actions held back (rate limit, backoff, no healthy endpoint)",
            counts.holds.clone(),
        );
        r.register(
            "dns_failures",
            "Endpoint resolutions that failed (the last good set was kept)",
            dns_failures.clone(),
        );
        r.register(
            "detection_latency_seconds",
            "From a socket's first unanswered retransmission to the decision to act on it",
            counts.latency.clone(),
        );
        r.register_collector(Box::new(probe.clone()));
        let fast = FastGauge::default();
        fast.register(&mut r);
        let servers = ServerCounters::default();
        servers.register(&mut r);
        Self(Arc::new(Inner {
            registry: r,
            watched,
            sockets,
            target_present,
            path_down,
            counts,
            dns_failures,
            probe,
            fast,
            servers,
        }))
    }

    /// The bound of `server` (`servers::METRICS`, `servers::STATUS`): `cap` clients at once,
    /// what it turns away counted here.
    #[must_use]
    pub(crate) fn gate(&self, server: &'static str, cap: usize) -> Gate {
        Gate::new(server, cap, self.0.servers.turned(server))
    }

    /// Where the decisions are counted (the kill log, the restarter).
    #[must_use]
    pub(crate) fn counts(&self) -> Counts {
        self.0.counts.clone()
    }

    /// Where the endpoint refreshers count their failed resolutions.
    #[must_use]
    pub(crate) fn dns_failures(&self) -> Counter {
        self.0.dns_failures.clone()
    }

    /// The `OpenMetrics` text exposition.
    #[must_use]
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.0.registry);
        out
    }

    /// Socket gauges and the probe's counters from a status snapshot; verdicts seen before
    /// and gone now drop to 0.
    pub(crate) fn observe(&self, s: &Snapshot, seen: &mut HashSet<String>) {
        let m = &*self.0;
        m.probe.observe(&s.probe_stats, s.capacity.inbox_dropped);
        m.fast.observe(&s.fast_probes);
        m.watched.set(i64::try_from(s.watched).unwrap_or(i64::MAX));
        m.path_down.set(i64::from(s.path_down_ms.is_some()));
        seen.extend(s.verdicts.keys().cloned());
        for v in seen.iter() {
            let n = s.verdicts.get(v).copied().unwrap_or(0);
            m.sockets
                .get_or_create(&VerdictLabel { verdict: v.clone() })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        for t in &s.targets {
            m.target_present
                .get_or_create(&TargetLabel {
                    target: t.target.clone(),
                })
                .set(i64::from(t.state != "waiting" && t.state != "no endpoint"));
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests;
