//! A decision in typed words, as its event and its metrics both say it: what was done and
//! how it ended. The one mapping from the judge's actions and outcomes (and the
//! restarter's) to the words of the decision event and the labels of the metrics.

use crate::judge::{Action, Outcome};

/// What was done: the decision event's `action` field and the metrics' `action` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum DecisionAction {
    /// Logged only (`--dry-run`, `--on-orphan log`, an unreadable socket).
    Nothing,
    Kill,
    Hold,
    Restart,
}

impl DecisionAction {
    #[must_use]
    pub(crate) const fn label(self) -> &'static str {
        match self {
            Self::Nothing => "none",
            Self::Kill => "kill",
            Self::Hold => "hold",
            Self::Restart => "restart",
        }
    }
}

impl From<Action> for DecisionAction {
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
pub(crate) enum OutcomeClass {
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

impl OutcomeClass {
    #[must_use]
    pub(crate) const fn label(self) -> &'static str {
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
    pub(crate) const fn text(self) -> &'static str {
        match self {
            Self::Held => "held: no healthy endpoint",
            Self::Policy => "policy: log",
            _ => self.label(),
        }
    }

    /// Why an action was held back (the `reason` label of the holds), if it was.
    pub(super) const fn held_for(self) -> Option<&'static str> {
        match self {
            Self::RateLimited | Self::Backoff => Some(self.label()),
            Self::Held => Some("no-healthy-endpoint"),
            _ => None,
        }
    }
}

impl From<&Outcome> for OutcomeClass {
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

/// One decision, as its event says it and the metrics count it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Decided {
    /// The judge's verdict word (`Reason::verdict`), or `unknown`, `unrecovered`.
    pub verdict: &'static str,
    pub did: DecisionAction,
    pub class: OutcomeClass,
    pub trouble_age_ms: u64,
}
