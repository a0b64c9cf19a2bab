//! Prometheus metrics (prometheus-client, `OpenMetrics` text). The decision counters are
//! fed, as typed values, by the code that logs each decision event, right beside that event
//! (so they count what the journal says, whatever the log filter lets through); the socket
//! gauges follow the daemon's status snapshots.

pub mod http;
pub mod probe;

use std::{
    collections::HashSet,
    sync::{Arc, OnceLock},
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use crate::report::{metrics::probe::ProbeCounters, status::Snapshot};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    verdict: String,
    action: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabel {
    verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabel {
    target: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HoldLabels {
    action: String,
    reason: String,
}

pub struct Metrics {
    registry: Registry,
    watched: Gauge,
    sockets: Family<VerdictLabel, Gauge>,
    target_present: Family<TargetLabel, Gauge>,
    decisions: Family<DecisionLabels, Counter>,
    kills: Counter,
    restarts: Family<ResultLabel, Counter>,
    holds: Family<HoldLabels, Counter>,
    dns_failures: Counter,
    latency: Histogram,
    probe: Arc<ProbeCounters>,
}

/// The process's metrics, created on first use.
pub fn get() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Self {
        let mut m = Self {
            registry: Registry::with_prefix("lifeline"),
            watched: Gauge::default(),
            sockets: Family::default(),
            target_present: Family::default(),
            decisions: Family::default(),
            kills: Counter::default(),
            restarts: Family::default(),
            holds: Family::default(),
            dns_failures: Counter::default(),
            latency: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
            probe: Arc::default(),
        };
        let r = &mut m.registry;
        r.register(
            "watched_sockets",
            "TCP sockets the probe watches",
            m.watched.clone(),
        );
        r.register(
            "sockets",
            "Watched sockets by current verdict",
            m.sockets.clone(),
        );
        r.register(
            "target_present",
            "1 while a watch target exists (a cgroup target is 0 while its unit is stopped or not yet started)",
            m.target_present.clone(),
        );
        r.register(
            "decisions",
            "Decisions on stalled sockets, by verdict, action and outcome",
            m.decisions.clone(),
        );
        r.register(
            "kills",
            "Sockets destroyed with SOCK_DESTROY",
            m.kills.clone(),
        );
        r.register(
            "restarts",
            "Restarts of --restart-unit, by result (restarted, failed)",
            m.restarts.clone(),
        );
        r.register(
            "holds",
            "Actions held back (rate limit, backoff, no healthy endpoint)",
            m.holds.clone(),
        );
        r.register(
            "dns_failures",
            "Endpoint resolutions that failed (the last good set was kept)",
            m.dns_failures.clone(),
        );
        r.register(
            "detection_latency_seconds",
            "From a socket's first unanswered retransmission to the decision to act on it",
            m.latency.clone(),
        );
        r.register_collector(Box::new(Arc::clone(&m.probe)));
        m
    }

    /// Export the probe's counters (`crate::report::metrics::probe`) from now on.
    pub fn follow_probe(&self, probe: &crate::kernel::probe::Probe) {
        match probe.stats_reader() {
            Ok(r) => self.probe.follow(r),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "the probe's counters are not in the metrics");
            }
        }
    }

    /// The `OpenMetrics` text exposition.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// A failed endpoint resolution.
    pub fn dns_failure(&self) {
        self.dns_failures.inc();
    }

    /// Socket gauges from a status snapshot; verdicts seen before and gone now drop to 0.
    pub fn observe(&self, s: &Snapshot, seen: &mut HashSet<String>) {
        self.watched
            .set(i64::try_from(s.watched).unwrap_or(i64::MAX));
        seen.extend(s.verdicts.keys().cloned());
        for v in seen.iter() {
            let n = s.verdicts.get(v).copied().unwrap_or(0);
            self.sockets
                .get_or_create(&VerdictLabel { verdict: v.clone() })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        for t in &s.targets {
            self.target_present
                .get_or_create(&TargetLabel {
                    target: t.target.clone(),
                })
                .set(i64::from(t.state != "waiting" && t.state != "no endpoint"));
        }
    }

    /// Count a decision.
    pub fn decision(&self, d: &Decision<'_>) {
        // "failed: <why>" carries free text: the label keeps the class only.
        let outcome = d.outcome.split(':').next().unwrap_or_default().to_owned();
        let labels = DecisionLabels {
            verdict: d.verdict.to_owned(),
            action: d.action.to_owned(),
            outcome: outcome.clone(),
        };
        self.decisions.get_or_create(&labels).inc();
        match (d.action, outcome.as_str()) {
            ("kill", "killed") => {
                self.kills.inc();
            }
            ("restart", "restarted" | "failed") => {
                self.restarts
                    .get_or_create(&ResultLabel {
                        result: outcome.clone(),
                    })
                    .inc();
            }
            (action, "rate-limited" | "backoff" | "held") => {
                let reason = d.outcome.trim_start_matches("held: ").replace(' ', "-");
                self.holds
                    .get_or_create(&HoldLabels {
                        action: action.to_owned(),
                        reason,
                    })
                    .inc();
            }
            _ => return,
        }
        // Acted (or tried, or was held): how long the socket had been in trouble.
        #[allow(clippy::cast_precision_loss, reason = "milliseconds far below 2^52")]
        self.latency.observe(d.trouble_age_ms as f64 / 1000.0);
    }
}

/// One decision as the metrics count it: the same words its decision event carries, handed
/// over as values by whoever logs the decision (never parsed back from the log).
pub struct Decision<'a> {
    pub verdict: &'a str,
    pub action: &'a str,
    /// "killed", "held: no healthy endpoint", "failed: ...": the class before `:` is a label.
    pub outcome: &'a str,
    pub trouble_age_ms: u64,
}
