//! Acting on a confirmed stall: kill the socket, bounded, and log the decision with
//! its evidence as one structured event (target `lifeline::decision`).

use std::{
    collections::{HashMap, VecDeque},
    time::{Duration, Instant},
};

use lifeline_common::SockState;

use crate::{
    clock,
    detect::Verdict,
    diag::{Destroyed, SockDiag, TcpInfo},
};

/// What the decision rests on: the probe's record and the kernel's `tcp_info`.
pub struct Evidence<'a> {
    pub cookie: u64,
    pub rec: &'a SockState,
    pub info: &'a TcpInfo,
    pub verdict: Verdict,
    pub now_ns: u64,
}

/// At most `max` kills in any sliding minute.
pub struct KillBudget {
    max: usize,
    recent: VecDeque<Instant>,
}

impl KillBudget {
    #[must_use]
    pub fn new(max_per_minute: u32) -> Self {
        Self { max: usize::try_from(max_per_minute).unwrap_or(usize::MAX), recent: VecDeque::new() }
    }

    fn try_take(&mut self, now: Instant) -> bool {
        while self.recent.front().is_some_and(|t| now.duration_since(*t) >= Duration::from_mins(1)) {
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
        Self { dry_run, kills: 0, budget: KillBudget::new(max_kills_per_minute), hold: HashMap::new() }
    }

    /// Kill a confirmed stalled or silent socket (unless held back), logging the decision.
    pub fn act(&mut self, diag: &mut SockDiag, ev: &Evidence<'_>) {
        let now = Instant::now();
        if self.hold.get(&ev.cookie).is_some_and(|(until, _)| now < *until) {
            return;
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
            let delay = self.hold.get(&ev.cookie).map_or(Duration::from_secs(5), |(_, d)| (*d * 2).min(Duration::from_mins(5)));
            self.hold.insert(ev.cookie, (now + delay, delay));
        }
        log_decision(ev, if self.dry_run { "none" } else { "kill" }, &outcome);
    }

    /// Forget sockets that no longer exist.
    pub fn retain(&mut self, live: impl Fn(u64) -> bool) {
        self.hold.retain(|c, _| live(*c));
    }
}

fn log_decision(ev: &Evidence<'_>, action: &str, outcome: &str) {
    let r = ev.rec;
    let owner_comm = r.comm().unwrap_or("-");
    let trouble_age_ms = clock::age_ms(ev.now_ns, r.trouble_ns);
    let fields = (r.peer(), r.local(), r.owner_pid, ev.info.last_ack_recv_ms, ev.info.unacked);
    let (verdict, why) = if ev.verdict == Verdict::Silent {
        ("silent", format!("idle, {} keepalive probes unanswered, nothing from the peer for {} ms", ev.info.probes, fields.3))
    } else {
        ("stalled", format!("no ACK for {} ms with {} segments unacknowledged", fields.3, fields.4))
    };
    let message = format!("{verdict} socket {} -> {} ({owner_comm}/{}): {why}; {action}: {outcome}", fields.1, fields.0, fields.2);
    let level_is_error = outcome.starts_with("failed");
    macro_rules! decision {
        ($lvl:ident) => {
            tracing::$lvl!(
                target: "lifeline::decision",
                peer = %fields.0,
                local = %fields.1,
                owner_pid = r.owner_pid,
                owner_comm,
                verdict,
                action,
                outcome,
                last_ack_age_ms = ev.info.last_ack_recv_ms,
                trouble_age_ms,
                unacked_segs = ev.info.unacked,
                unacked_bytes = r.unacked_bytes(),
                retransmits = r.retrans_count,
                rto_count = r.rto_count,
                total_retrans = ev.info.total_retrans,
                keepalive_probes = ev.info.probes,
                "{message}"
            )
        };
    }
    if level_is_error {
        decision!(error);
    } else {
        decision!(warn);
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
        assert!(!b.try_take(t0 + Duration::from_secs(2)), "third kill inside the minute");
        assert!(b.try_take(t0 + Duration::from_secs(61)), "first one aged out");
    }
}
