//! Acting on a dead socket (stalled, silent, orphaned, dead peer): kill it, bounded, and
//! log the decision with its evidence as one structured event (target `lifeline::decision`).

use std::{
    collections::{HashMap, VecDeque},
    time::{Duration, Instant},
};

use lifeline_common::SockState;

use crate::{
    detect::Verdict,
    diag::{Destroyed, SockDiag, TcpInfo},
};

/// Why a socket is to be killed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Confirmed stalled or silent (two witnesses, two looks).
    Dead(Verdict),
    /// The peer's address left the endpoint's set for longer than the grace.
    Orphaned {
        endpoint: String,
        absent_for: Duration,
    },
    /// A fresh connection to the peer timed out twice.
    DeadPeer { endpoint: Option<String> },
}

impl Reason {
    #[must_use]
    pub const fn verdict(&self) -> &'static str {
        match self {
            Self::Dead(Verdict::Silent) => "silent",
            Self::Dead(_) => "stalled",
            Self::Orphaned { .. } => "orphaned",
            Self::DeadPeer { .. } => "dead-peer",
        }
    }
}

/// What the decision rests on: the probe's record, the kernel's `tcp_info`, and the reason.
pub struct Evidence<'a> {
    pub cookie: u64,
    pub rec: &'a SockState,
    pub info: &'a TcpInfo,
    pub reason: &'a Reason,
    pub now_ns: u64,
}

mod log;
use log::log_decision;

/// At most `max` kills in any sliding minute.
pub struct KillBudget {
    max: usize,
    recent: VecDeque<Instant>,
}

impl KillBudget {
    #[must_use]
    pub fn new(max_per_minute: u32) -> Self {
        Self {
            max: usize::try_from(max_per_minute).unwrap_or(usize::MAX),
            recent: VecDeque::new(),
        }
    }

    fn try_take(&mut self, now: Instant) -> bool {
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_mins(1))
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.max {
            return false;
        }
        self.recent.push_back(now);
        true
    }
}

pub struct Actor {
    pub dry_run: bool,
    pub kills: u64,
    budget: KillBudget,
    /// Sockets not to touch again before this instant (after a failure or report),
    /// with the delay to use next time: exponential backoff, capped.
    hold: HashMap<u64, (Instant, Duration)>,
}

impl Actor {
    #[must_use]
    pub fn new(dry_run: bool, max_kills_per_minute: u32) -> Self {
        Self {
            dry_run,
            kills: 0,
            budget: KillBudget::new(max_kills_per_minute),
            hold: HashMap::new(),
        }
    }

    /// Kill a socket (unless held back), logging the decision.
    /// Returns the outcome ("killed", "gone", "failed: ...", ...), None when held back.
    pub fn act(&mut self, diag: &mut SockDiag, ev: &Evidence<'_>) -> Option<String> {
        let now = Instant::now();
        if self
            .hold
            .get(&ev.cookie)
            .is_some_and(|(until, _)| now < *until)
        {
            return None;
        }
        let outcome = if self.dry_run {
            "dry-run".to_owned()
        } else if !self.budget.try_take(now) {
            "rate-limited".to_owned()
        } else {
            match diag.destroy(ev.rec.local(), ev.rec.peer(), ev.cookie) {
                Ok(Destroyed::Killed) => {
                    self.kills += 1;
                    "killed".to_owned()
                }
                Ok(Destroyed::Gone) => "gone".to_owned(),
                Err(e) => format!("failed: {e}"),
            }
        };
        if outcome != "killed" && outcome != "gone" {
            let delay = self
                .hold
                .get(&ev.cookie)
                .map_or(Duration::from_secs(5), |(_, d)| {
                    (*d * 2).min(Duration::from_mins(5))
                });
            self.hold.insert(ev.cookie, (now + delay, delay));
        }
        log_decision(ev, if self.dry_run { "none" } else { "kill" }, &outcome);
        Some(outcome)
    }

    /// The kill is held back because no endpoint address accepts connections.
    pub fn hold(ev: &Evidence<'_>) {
        log_decision(ev, "hold", "held: no healthy endpoint");
    }

    /// Forget sockets that no longer exist.
    pub fn retain(&mut self, live: impl Fn(u64) -> bool) {
        self.hold.retain(|c, _| live(*c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_allows_max_per_sliding_minute() {
        let mut b = KillBudget::new(2);
        let t0 = Instant::now();
        assert!(b.try_take(t0));
        assert!(b.try_take(t0 + Duration::from_secs(1)));
        assert!(
            !b.try_take(t0 + Duration::from_secs(2)),
            "third kill inside the minute"
        );
        assert!(
            b.try_take(t0 + Duration::from_secs(61)),
            "first one aged out"
        );
    }
}
