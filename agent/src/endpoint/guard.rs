//! Do no harm: before any kill, at least one address of the endpoint's current set must
//! accept a TCP connection. When none does, the control plane itself is down and killing
//! helps nobody; the kills are held and the check is repeated with backoff.

use std::time::{Duration, Instant};

use super::Endpoints;

/// A check result is reused this long (one check serves a whole batch of kills).
const FRESH: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

#[derive(Default)]
pub struct Guard {
    last: Option<(bool, Instant)>,
    /// While holding: no new check before this.
    next_check: Option<Instant>,
    backoff: Duration,
    pub holds: u64,
}

/// The guard's answer for a batch of kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Go,
    /// No endpoint accepted; the batch is held.
    Hold,
    /// Holding, and not yet time to check again.
    Wait,
}

impl Guard {
    pub async fn check(&mut self, endpoints: &Endpoints) -> Verdict {
        if endpoints.is_empty() {
            return Verdict::Go;
        }
        let now = Instant::now();
        if self.next_check.is_some_and(|t| now < t) {
            return Verdict::Wait;
        }
        let healthy = match self.last {
            Some((h, at)) if at.elapsed() < FRESH => h,
            _ => {
                let h = endpoints.any_accepts().await;
                self.last = Some((h, Instant::now()));
                h
            }
        };
        if healthy {
            self.next_check = None;
            self.backoff = Duration::ZERO;
            return Verdict::Go;
        }
        self.backoff = (self.backoff * 2).clamp(Duration::from_secs(1), MAX_BACKOFF);
        self.next_check = Some(Instant::now() + self.backoff);
        self.holds += 1;
        Verdict::Hold
    }

    /// When the held batch should be looked at again.
    #[must_use]
    pub fn next_check(&self) -> Option<Instant> {
        self.next_check
    }
}
