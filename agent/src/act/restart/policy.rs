//! When a restart may happen: at most `max` in any sliding hour, and after each restart an
//! exponential, jittered pause (so that a fleet that lost the same endpoint at once does
//! not restart every kubelet in the same second and storm the API server with re-lists).

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

const HOUR: Duration = Duration::from_hours(1);
/// The longest pause, whatever `--restart-backoff` and the doubling say.
const MAX_PAUSE: Duration = Duration::from_mins(30);

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RestartGate {
    Go,
    /// The hourly budget is spent; the oldest restart ages out after this long.
    RateLimited(Duration),
    /// Still inside the pause after the previous restart, for this long.
    Backoff(Duration),
}

pub(crate) struct RestartPolicy {
    max: usize,
    /// The first pause after a restart (`--restart-backoff`); doubled after each further one.
    first_pause: Duration,
    recent: VecDeque<Instant>,
    not_before: Option<Instant>,
}

impl RestartPolicy {
    #[must_use]
    pub(crate) fn new(max_per_hour: u32, first_pause: Duration) -> Self {
        Self {
            max: usize::try_from(max_per_hour).unwrap_or(usize::MAX),
            first_pause,
            recent: VecDeque::new(),
            not_before: None,
        }
    }

    /// May a restart start now? Does not count it: `record` does, once it ran.
    pub(crate) fn gate(&mut self, now: Instant) -> RestartGate {
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= HOUR)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.max {
            let oldest = self.recent.front().copied().unwrap_or(now);
            return RestartGate::RateLimited(HOUR.saturating_sub(now.duration_since(oldest)));
        }
        match self.not_before {
            Some(t) if now < t => RestartGate::Backoff(t - now),
            _ => RestartGate::Go,
        }
    }

    /// A restart ran at `now`; `jitter` in [0, 1) spreads the next pause by ±20 %.
    pub(crate) fn record(&mut self, now: Instant, jitter: f64) {
        self.recent.push_back(now);
        // The pause grows with the restarts of the last hour: 1, 2, 4, ... minutes by default.
        let exp = u32::try_from(self.recent.len().saturating_sub(1))
            .unwrap_or(u32::MAX)
            .min(16);
        let pause = self.first_pause.saturating_mul(1 << exp).min(MAX_PAUSE);
        self.not_before = Some(now + pause.mul_f64(0.8 + 0.4 * jitter.clamp(0.0, 1.0)));
    }
}

/// A fresh random number in [0, 1), from std's per-instance random hash keys.
#[must_use]
pub(crate) fn jitter() -> f64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        >> 11;
    #[allow(
        clippy::cast_precision_loss,
        reason = "53 random bits fit an f64 mantissa exactly"
    )]
    let x = bits as f64 / (1u64 << 53) as f64;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hourly_budget_then_backoff() {
        let mut p = RestartPolicy::new(2, Duration::from_mins(1));
        let t0 = Instant::now();
        assert_eq!(p.gate(t0), RestartGate::Go);
        p.record(t0, 0.5);
        assert!(
            matches!(
                p.gate(t0 + Duration::from_secs(30)),
                RestartGate::Backoff(_)
            ),
            "inside the first minute"
        );
        assert_eq!(p.gate(t0 + Duration::from_secs(61)), RestartGate::Go);
        p.record(t0 + Duration::from_secs(61), 0.5);
        assert!(
            matches!(
                p.gate(t0 + Duration::from_mins(10)),
                RestartGate::RateLimited(_)
            ),
            "two in the hour"
        );
        assert_eq!(
            p.gate(t0 + Duration::from_mins(62)),
            RestartGate::Go,
            "the first aged out"
        );
    }

    #[test]
    fn pauses_grow_and_are_jittered() {
        let t0 = Instant::now();
        let mut p = RestartPolicy::new(10, Duration::from_mins(1));
        p.record(t0, 0.0);
        p.record(t0, 0.0);
        let RestartGate::Backoff(low) = p.gate(t0) else {
            panic!("expected a pause")
        };
        assert_eq!(low, Duration::from_secs(96), "2 minutes x 0.8");
        let mut q = RestartPolicy::new(10, Duration::from_mins(1));
        q.record(t0, 0.999_999);
        let RestartGate::Backoff(high) = q.gate(t0) else {
            panic!("expected a pause")
        };
        assert!(
            high > Duration::from_secs(71) && high <= Duration::from_secs(72),
            "{high:?}"
        );
        assert!((0.0..1.0).contains(&jitter()));
    }

    #[test]
    fn a_shorter_first_pause_lets_three_restarts_run_in_a_row() {
        let t0 = Instant::now();
        let mut p = RestartPolicy::new(3, Duration::from_secs(2));
        let mut now = t0;
        for n in 0..3 {
            assert_eq!(p.gate(now), RestartGate::Go, "restart {}", n + 1);
            p.record(now, 0.999_999);
            // 2, 4, 8 s (+20 %): each pause has passed 10 s later.
            now += Duration::from_secs(10);
        }
        assert!(
            matches!(p.gate(now), RestartGate::RateLimited(d) if d > Duration::from_mins(59)),
            "the fourth within the hour is rate-limited"
        );
    }
}
