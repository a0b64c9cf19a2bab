//! The pacing of the fast probes' TCP iterator passes (`fast.rs`): a CPU credit earned at one
//! `SHARE`th of the time that passes (2 % of a core, whatever the node), holding at most
//! `BURST`, spent by each pass's own CPU time. One phase (11 pokes) runs at the interval on a
//! node whose pass costs a few ms; a node whose passes cost more than their share is paced to
//! it over any stretch.

use std::time::Duration;

use crate::judge::Mono;

/// Passes earn their CPU at one this-many-th of the time that passes (2 % of a core).
const SHARE: u32 = 50;

/// The most CPU the passes may spend ahead of their share: a phase's 11 pokes at 4 ms.
const BURST: Duration = Duration::from_millis(50);

/// The passes' pacing. Which phases are open, and since when, is each socket's own
/// (`Tracked::fast_since`, `tracked.rs`).
#[derive(Default)]
pub(super) struct FastPhases {
    last_pass: Option<Mono>,
    credit: Credit,
}

/// The passes' CPU credit: earned at one `SHARE`th of the time, at most `BURST`, spent by
/// each pass's own CPU time; a pass waits while it is below zero.
#[derive(Debug, Default)]
struct Credit {
    /// Nanoseconds of CPU left after the last pass (below zero: owed); `None` before any.
    left_ns: i64,
    /// When `left_ns` was counted; `None`: no pass yet, the whole `BURST` is there.
    at: Option<Mono>,
}

impl Credit {
    fn ns(d: Duration) -> i64 {
        i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
    }

    /// The credit at `now`.
    fn at(&self, now: Mono) -> i64 {
        let burst = Self::ns(BURST);
        self.at.map_or(burst, |t| {
            let earned = Self::ns(now - t) / i64::from(SHARE);
            self.left_ns.saturating_add(earned).min(burst)
        })
    }

    /// A pass at `now` that took `cost` of CPU.
    fn spend(&mut self, cost: Duration, now: Mono) {
        self.left_ns = self.at(now).saturating_sub(Self::ns(cost));
        self.at = Some(now);
    }

    /// When the credit is back to zero; `None` while it is not below.
    fn repaid_at(&self) -> Option<Mono> {
        let owed = u64::try_from(self.left_ns.checked_neg()?).ok()?;
        let t = self.at?;
        Some(t + Duration::from_nanos(owed.saturating_mul(u64::from(SHARE))))
    }
}

impl FastPhases {
    /// A phase opened at `at` (a socket's first keepalive probe went unanswered), `first`
    /// when no other was open. Its first poke is due an interval later: when no phase was
    /// open, the next pass is counted from now, not from the last one.
    pub(super) fn opened(&mut self, first: bool, at: Mono) {
        if first {
            self.last_pass = Some(at);
        }
    }

    /// A pass ran at `at` and took `cost` of this thread's CPU.
    pub(super) fn passed(&mut self, cost: Duration, at: Mono) {
        self.credit.spend(cost, at);
        self.last_pass = Some(at);
    }

    /// When the next pass is due (`now` when none ran yet); `None` while no phase is open
    /// (`any_open`).
    #[must_use]
    pub(super) fn due(&self, any_open: bool, interval: Duration, now: Mono) -> Option<Mono> {
        if !any_open {
            return None;
        }
        let Some(last) = self.last_pass else {
            return Some(now);
        };
        let next = last + interval;
        Some(self.credit.repaid_at().map_or(next, |t| t.max(next)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_runs_at_the_interval_and_a_costly_node_is_paced_to_its_share() {
        let mut f = FastPhases::default();
        let ms = Duration::from_millis;
        let mut t = Mono::from_secs(100);
        assert_eq!(f.due(false, ms(100), t), None, "no phase, no pass");
        f.opened(true, t);
        assert_eq!(
            f.due(true, ms(100), t),
            Some(t + ms(100)),
            "the first poke, an interval on"
        );
        // A phase of 11 pokes at 4 ms each (this VM's TCP hash): every one at the interval.
        for _ in 0..11 {
            t = f.due(true, ms(100), t).unwrap();
            f.passed(ms(4), t);
        }
        assert_eq!(f.due(true, ms(100), t), Some(t + ms(100)));
        // A node whose pass costs 40 ms: what is left of the burst pays for the first, then
        // one pass per 2 s.
        let mut passes = vec![t];
        for _ in 0..6 {
            t = f.due(true, ms(100), t).unwrap();
            f.passed(ms(40), t);
            passes.push(t);
        }
        let gaps: Vec<Duration> = passes.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(gaps[0], ms(100), "on credit: {gaps:?}");
        assert!(
            gaps.iter().rev().take(3).all(|g| *g == ms(2_000)),
            "paced to 2 %: {gaps:?}"
        );
        // Idle for long: the credit is back, but no more than the burst.
        t = t + Duration::from_hours(1);
        assert_eq!(f.credit.at(t), Credit::ns(BURST));
    }

    #[test]
    fn over_any_stretch_passes_spend_at_most_their_share_and_the_burst() {
        let mut f = FastPhases::default();
        let ms = Duration::from_millis;
        let start = Mono::from_secs(10);
        f.opened(true, start);
        let (mut t, mut spent) = (start, Duration::ZERO);
        // 1,000 passes of 7 ms as fast as they are allowed.
        for _ in 0..1_000 {
            t = f.due(true, ms(100), t).unwrap();
            f.passed(ms(7), t);
            spent += ms(7);
        }
        let share = (t - start) / SHARE;
        assert!(
            spent <= share + BURST + ms(7),
            "{spent:?} of CPU over {:?}",
            t - start
        );
    }
}
