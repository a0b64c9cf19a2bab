//! What every decision adds to the metrics, counted right beside its decision event and
//! from the same typed values (`decided.rs`), so the counters say what the journal says,
//! whatever the log filter lets through. The counters are prometheus-client handles made
//! once in `run` and registered by `report::metrics`: this stage never reaches up to it.

use std::fmt::Write as _;

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder},
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{Histogram, exponential_buckets},
    },
};

use super::decided::{Decided, DecisionAction, OutcomeClass};

impl EncodeLabelValue for DecisionAction {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.label())
    }
}

impl EncodeLabelValue for OutcomeClass {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.label())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct DecisionLabels {
    verdict: &'static str,
    action: DecisionAction,
    outcome: OutcomeClass,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ResultLabel {
    result: OutcomeClass,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HoldLabels {
    action: DecisionAction,
    reason: &'static str,
}

/// The decision counters; a clone counts into the same series.
#[derive(Clone, Debug)]
pub(crate) struct Counts {
    pub decisions: Family<DecisionLabels, Counter>,
    pub kills: Counter,
    pub restarts: Family<ResultLabel, Counter>,
    pub holds: Family<HoldLabels, Counter>,
    pub latency: Histogram,
}

/// Every hold the gate and the restarter can count (`OutcomeClass::held_for` of what each can
/// decide), exposed at 0 from the start.
const HOLDS: [(DecisionAction, OutcomeClass); 5] = [
    (DecisionAction::Kill, OutcomeClass::RateLimited),
    (DecisionAction::Hold, OutcomeClass::Held),
    (DecisionAction::Restart, OutcomeClass::RateLimited),
    (DecisionAction::Restart, OutcomeClass::Backoff),
    (DecisionAction::Restart, OutcomeClass::Held),
];

impl Default for Counts {
    /// The hold and restart series exist at 0 before their first event, as the kill counter
    /// does: Prometheus' `increase()` counts nothing for a series' first sample, so an alert
    /// on a series born at 1 (packaging/prometheus/lifeline-rules.yaml: a failed restart,
    /// a hold) would miss the first event.
    fn default() -> Self {
        let counts = Self {
            decisions: Family::default(),
            kills: Counter::default(),
            restarts: Family::default(),
            holds: Family::default(),
            latency: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
        };
        for result in [OutcomeClass::Restarted, OutcomeClass::Failed] {
            let _ = counts.restarts.get_or_create(&ResultLabel { result });
        }
        for (action, class) in HOLDS {
            if let Some(reason) = class.held_for() {
                let _ = counts.holds.get_or_create(&HoldLabels { action, reason });
            }
        }
        counts
    }
}

impl Counts {
    /// Count a decision.
    pub(crate) fn count(&self, d: &Decided) {
        let labels = DecisionLabels {
            verdict: d.verdict,
            action: d.did,
            outcome: d.class,
        };
        self.decisions.get_or_create(&labels).inc();
        match (d.did, d.class) {
            (DecisionAction::Kill, OutcomeClass::Killed) => {
                self.kills.inc();
            }
            (DecisionAction::Restart, OutcomeClass::Restarted | OutcomeClass::Failed) => {
                self.restarts
                    .get_or_create(&ResultLabel { result: d.class })
                    .inc();
            }
            (action, class) => {
                let Some(reason) = class.held_for() else {
                    return;
                };
                self.holds
                    .get_or_create(&HoldLabels { action, reason })
                    .inc();
            }
        }
        // Acted (or tried, or was held): how long the socket had been in trouble.
        #[allow(clippy::cast_precision_loss, reason = "milliseconds far below 2^52")]
        self.latency.observe(d.trouble_age_ms as f64 / 1000.0);
    }
}

#[cfg(test)]
#[path = "count_tests.rs"]
mod tests;
