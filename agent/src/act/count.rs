//! What every decision adds to the metrics, counted right beside its decision event and
//! from the same typed values (so the counters say what the journal says, whatever the log
//! filter lets through). The counters are prometheus-client handles made once in `run` and
//! registered by `report::metrics`: this stage never reaches up to the report.

use std::fmt::Write as _;

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder},
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{Histogram, exponential_buckets},
    },
};

use crate::judge::{Action, Outcome};

/// What was done: the decision event's `action` field and the metrics' `action` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Did {
    /// Logged only (`--dry-run`, `--on-orphan log`, an unreadable socket).
    Nothing,
    Kill,
    Hold,
    Restart,
}

impl Did {
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Nothing => "none",
            Self::Kill => "kill",
            Self::Hold => "hold",
            Self::Restart => "restart",
        }
    }
}

impl From<Action> for Did {
    /// A kill held by its budget (or backing off) is still a kill decision.
    fn from(action: Action) -> Self {
        match action {
            Action::DryRun => Self::Nothing,
            Action::Hold => Self::Hold,
            Action::Restart => Self::Restart,
            Action::Kill | Action::RateLimited | Action::Quiet => Self::Kill,
        }
    }
}

/// How it ended, as a class: the metrics' `outcome` label. The event's `outcome` field may
/// add free text after a `:` (`failed: <why>`), which never becomes a label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    Killed,
    Gone,
    Failed,
    DryRun,
    RateLimited,
    /// No endpoint address accepts connections.
    Held,
    /// Still pausing after the last restart.
    Backoff,
    Restarted,
    /// A policy said to log only (`--on-orphan log`).
    Policy,
    /// The kernel's state of the socket could not be read.
    Unreadable,
}

impl Class {
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Killed => "killed",
            Self::Gone => "gone",
            Self::Failed => "failed",
            Self::DryRun => "dry-run",
            Self::RateLimited => "rate-limited",
            Self::Held => "held",
            Self::Backoff => "backoff",
            Self::Restarted => "restarted",
            Self::Policy => "policy",
            Self::Unreadable => "unreadable",
        }
    }

    /// The event's whole `outcome` for a class that needs no free text.
    #[must_use]
    pub const fn text(self) -> &'static str {
        match self {
            Self::Held => "held: no healthy endpoint",
            Self::Policy => "policy: log",
            _ => self.label(),
        }
    }

    /// Why an action was held back (the `reason` label of the holds), if it was.
    const fn held_for(self) -> Option<&'static str> {
        match self {
            Self::RateLimited => Some("rate-limited"),
            Self::Backoff => Some("backoff"),
            Self::Held => Some("no-healthy-endpoint"),
            _ => None,
        }
    }
}

impl From<&Outcome> for Class {
    fn from(outcome: &Outcome) -> Self {
        match outcome {
            Outcome::Killed => Self::Killed,
            Outcome::Gone => Self::Gone,
            Outcome::Failed(_) => Self::Failed,
            Outcome::DryRun => Self::DryRun,
            Outcome::RateLimited => Self::RateLimited,
            Outcome::Held => Self::Held,
        }
    }
}

impl EncodeLabelValue for Did {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.label())
    }
}

impl EncodeLabelValue for Class {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.label())
    }
}

/// One decision as counted.
#[derive(Clone, Copy, Debug)]
pub struct Decided {
    /// The judge's verdict word (`Reason::verdict`), or `unknown`, `unrecovered`.
    pub verdict: &'static str,
    pub did: Did,
    pub class: Class,
    pub trouble_age_ms: u64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    verdict: &'static str,
    action: Did,
    outcome: Class,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    result: Class,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HoldLabels {
    action: Did,
    reason: &'static str,
}

/// The decision counters; a clone counts into the same series.
#[derive(Clone, Debug)]
pub struct Counts {
    pub decisions: Family<DecisionLabels, Counter>,
    pub kills: Counter,
    pub restarts: Family<ResultLabel, Counter>,
    pub holds: Family<HoldLabels, Counter>,
    pub latency: Histogram,
}

impl Default for Counts {
    fn default() -> Self {
        Self {
            decisions: Family::default(),
            kills: Counter::default(),
            restarts: Family::default(),
            holds: Family::default(),
            latency: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
        }
    }
}

impl Counts {
    /// Count a decision.
    pub fn count(&self, d: &Decided) {
        let labels = DecisionLabels {
            verdict: d.verdict,
            action: d.did,
            outcome: d.class,
        };
        self.decisions.get_or_create(&labels).inc();
        match (d.did, d.class) {
            (Did::Kill, Class::Killed) => {
                self.kills.inc();
            }
            (Did::Restart, Class::Restarted | Class::Failed) => {
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
