//! Re-resolving an endpoint on the first sign of trouble of one of its sockets (the first
//! RTO or retransmission, the first unanswered keepalive probe: `news::TROUBLE`,
//! `news::UNANSWERED`) instead of at its TTL. A load balancer that rotates its address
//! silences the old one as DNS moves: waiting for the TTL (5 s, up to `--max-refresh`) is
//! most of the time a rotated endpoint takes to be followed, while the socket's own silence
//! says within a keepalive interval that something changed.
//!
//! Bounded: at most one early re-resolve per endpoint per `EARLY_EVERY`, whatever the
//! number of troubled sockets, so a lossy path costs at most one DNS query a second per
//! endpoint. An early answer is an answer like any other (it moves the set); an early
//! failure changes nothing: the set, its clock and the refresh schedule stay as they were.

use std::{
    sync::{Arc, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use super::Endpoints;

/// At most one early re-resolve of an endpoint this often.
pub(super) const EARLY_EVERY: Duration = Duration::from_secs(1);

/// One endpoint set's early re-resolve requests (its refresher waits on `wake`).
#[derive(Debug, Default)]
pub(crate) struct Early {
    wake: Arc<Notify>,
    last: Option<Instant>,
}

impl Early {
    /// A request at `now`: granted (and the refresher woken) unless one was granted less
    /// than `EARLY_EVERY` ago.
    fn ask(&mut self, now: Instant) -> bool {
        if self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) < EARLY_EVERY)
        {
            return false;
        }
        self.last = Some(now);
        self.wake.notify_one();
        true
    }

    /// What the set's refresher waits on.
    #[must_use]
    pub(crate) fn waker(&self) -> Arc<Notify> {
        Arc::clone(&self.wake)
    }
}

impl Endpoints {
    /// A socket of endpoint `i` shows its first sign of trouble at `now`: re-resolve that
    /// endpoint now (rate limited). Returns whether a re-resolve was asked for; never for a
    /// fixed set (an IP literal) or a local proxy's upstreams (its follower's).
    pub(crate) fn resolve_early(&self, i: usize, now: Instant) -> bool {
        let Some(set) = self.sets().get(i).cloned() else {
            return false;
        };
        let mut s = set.lock().unwrap_or_else(PoisonError::into_inner);
        !s.fixed && !s.proxied && s.early.ask(now)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::Endpoints;

    #[test]
    fn at_most_one_early_re_resolve_a_second_and_none_for_a_literal() {
        let e = Endpoints::new(&[("api.test".into(), 6443), ("198.51.100.2".into(), 6443)]);
        let t0 = Instant::now();
        assert!(e.resolve_early(0, t0));
        assert!(!e.resolve_early(0, t0 + Duration::from_millis(999)));
        assert!(e.resolve_early(0, t0 + Duration::from_secs(1)));
        assert!(
            !e.resolve_early(1, t0),
            "an IP literal has nothing to resolve"
        );
        assert!(!e.resolve_early(7, t0), "no such endpoint");
    }
}
