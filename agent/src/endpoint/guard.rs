//! Do no harm: before any kill, at least one address of the endpoint's current set must
//! accept a TCP connection. When none does, the control plane itself is down and killing
//! helps nobody; the kills are held and the check is repeated with backoff.

use std::time::Duration;

use crate::judge::Mono;

/// A check result is reused this long (one check serves a whole batch of kills).
const FRESH: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

#[derive(Default)]
pub(crate) struct Guard {
    last: Option<(bool, Mono)>,
    /// While holding: no new check before this.
    next_check: Option<Mono>,
    backoff: Duration,
    pub holds: u64,
}

/// The guard's answer for a batch of kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GuardVerdict {
    Go,
    /// No endpoint accepted; the batch is held.
    Hold,
    /// Holding, and not yet time to check again.
    Wait,
}

/// Whether the guard can answer from what it knows, or a connect test is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GuardStep {
    Known(GuardVerdict),
    /// Test the endpoint (`Endpoints::any_accepts`) and hand the result to `after`.
    Check,
}

impl Guard {
    /// Before a batch of kills: answer from a fresh result, or wait out the backoff, or ask
    /// for a test. `configured`: whether there is an endpoint at all (else always Go).
    #[must_use]
    pub(crate) fn before(&self, configured: bool, now: Mono) -> GuardStep {
        if !configured {
            return GuardStep::Known(GuardVerdict::Go);
        }
        if self.next_check.is_some_and(|t| now < t) {
            return GuardStep::Known(GuardVerdict::Wait);
        }
        match self.last {
            Some((h, at)) if now.saturating_duration_since(at) < FRESH => GuardStep::Known(if h {
                GuardVerdict::Go
            } else {
                GuardVerdict::Hold
            }),
            _ => GuardStep::Check,
        }
    }

    /// The test's result: healthy resets the backoff; unhealthy holds the batch and backs
    /// off (1 s doubling to 30 s) before the next test.
    pub(crate) fn after(&mut self, healthy: bool, now: Mono) -> GuardVerdict {
        self.last = Some((healthy, now));
        if healthy {
            self.next_check = None;
            self.backoff = Duration::ZERO;
            return GuardVerdict::Go;
        }
        self.backoff = (self.backoff * 2).clamp(Duration::from_secs(1), MAX_BACKOFF);
        self.next_check = Some(now + self.backoff);
        self.holds += 1;
        GuardVerdict::Hold
    }

    /// Whether the last check found no endpoint address accepting, so kills are held (the
    /// daemon defers the kernel's own keepalive aborts meanwhile, `daemon/defer.rs`).
    #[must_use]
    pub(crate) fn holding(&self) -> bool {
        matches!(self.last, Some((false, _)))
    }

    /// Forget the last answer: the path was found down since (a peer probe found no address
    /// accepting), so a healthy answer from before it no longer stands.
    pub(crate) fn forget(&mut self) {
        if self.last.is_some_and(|(healthy, _)| healthy) {
            self.last = None;
        }
    }

    /// When the held batch should be looked at again.
    #[must_use]
    pub(crate) fn next_check(&self) -> Option<Mono> {
        self.next_check
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_back_off_and_a_healthy_answer_resets() {
        let mut g = Guard::default();
        let t0 = Mono::from_secs(100);
        assert_eq!(
            g.before(false, t0),
            GuardStep::Known(GuardVerdict::Go),
            "no endpoint: never held"
        );
        assert_eq!(g.before(true, t0), GuardStep::Check);
        assert_eq!(g.after(false, t0), GuardVerdict::Hold);
        assert_eq!(
            g.before(true, t0 + Duration::from_millis(500)),
            GuardStep::Known(GuardVerdict::Wait)
        );
        assert_eq!(
            g.before(true, t0 + Duration::from_millis(1_001)),
            GuardStep::Check
        );
        assert_eq!(
            g.after(false, t0 + Duration::from_secs(1)),
            GuardVerdict::Hold
        );
        assert_eq!(
            g.next_check(),
            Some(t0 + Duration::from_secs(3)),
            "the second hold waits 2 s"
        );
        for i in 0..10 {
            g.after(false, t0 + Duration::from_secs(10 + i));
        }
        assert_eq!(g.backoff, MAX_BACKOFF, "capped");
        assert_eq!(g.holds, 12);
        let t = t0 + Duration::from_mins(5);
        assert_eq!(g.after(true, t), GuardVerdict::Go);
        assert_eq!(
            g.before(true, t + Duration::from_millis(10)),
            GuardStep::Known(GuardVerdict::Go),
            "fresh answer reused"
        );
        assert_eq!(g.before(true, t + FRESH), GuardStep::Check);
    }
}
