//! Escalation, the rules: when to ask for a restart of `--restart-unit`.
//! - the kill failed (e.g. no `SOCK_DESTROY` in the kernel, no `CAP_NET_ADMIN`);
//! - after a kill, no healthy connection to the same port (to the endpoint, when one is
//!   configured: its own connection, `endpoint::Members`) is established within
//!   `--escalate-after` (the client did not re-dial, or cannot);
//! - `--action restart`: a confirmed failure (stalled, silent, dead peer) restarts instead of
//!   killing; an orphan migration is hygiene, not a failure, and is still a kill.
//!
//! The requests go to the restarter task (`systemd/restarter.rs`), which applies the hourly
//! budget, the pause and the endpoint check, calls systemd and logs. One request per socket.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use super::{Kill, Outcome, Seen, Verdict};
use crate::{clock, node_args::ActionMode};

/// Why a restart is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestartReason {
    KillFailed,
    NoRecovery,
    ActionRestart,
}

impl RestartReason {
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::KillFailed => "kill-failed",
            Self::NoRecovery => "no-recovery",
            Self::ActionRestart => "action-restart",
        }
    }
}

/// What the restarter needs to decide and to log the decision.
#[derive(Clone, Debug)]
pub struct RestartRequest {
    pub at: Instant,
    pub reason: RestartReason,
    /// The socket's real verdict ("stalled", "silent", "dead-peer"), or "unrecovered".
    pub verdict: &'static str,
    pub peer: std::net::SocketAddr,
    pub local: std::net::SocketAddr,
    pub owner_pid: u32,
    pub owner_comm: String,
    pub trouble_age_ms: u64,
}

/// A kill whose effect is being watched: does a healthy connection to the port come back?
struct AfterKill {
    request: RestartRequest,
    port: u16,
}

pub struct Escalation {
    mode: ActionMode,
    escalate_after: Duration,
    asked: HashSet<u64>,
    watching: Vec<AfterKill>,
}

impl Escalation {
    #[must_use]
    pub fn new(mode: ActionMode, escalate_after: Duration) -> Self {
        Self {
            mode,
            escalate_after,
            asked: HashSet::new(),
            watching: Vec::new(),
        }
    }

    #[must_use]
    pub fn restarts_instead(&self) -> bool {
        self.mode == ActionMode::Restart
    }

    fn request(kill: &Kill, reason: RestartReason, at: Instant) -> RestartRequest {
        RestartRequest {
            at,
            reason,
            verdict: kill.reason.verdict(),
            peer: kill.rec.peer(),
            local: kill.rec.local(),
            owner_pid: kill.rec.owner_pid,
            owner_comm: kill.rec.comm().unwrap_or("-").to_owned(),
            trouble_age_ms: clock::age_ms(kill.now_ns, kill.rec.trouble_ns),
        }
    }

    /// Once per socket: a stall that persists is not asked about again.
    fn ask(&mut self, kill: &Kill, reason: RestartReason, at: Instant) -> Option<RestartRequest> {
        self.asked
            .insert(kill.cookie)
            .then(|| Self::request(kill, reason, at))
    }

    /// `--action restart` for a confirmed failure.
    pub fn restart_instead(&mut self, kill: &Kill, at: Instant) -> Option<RestartRequest> {
        self.ask(kill, RestartReason::ActionRestart, at)
    }

    pub(super) fn after_outcome(
        &mut self,
        kill: &Kill,
        outcome: &Outcome,
        at: Instant,
    ) -> Option<RestartRequest> {
        match outcome {
            Outcome::Killed if kill.reason.is_failure() => {
                self.watching.push(AfterKill {
                    request: Self::request(kill, RestartReason::NoRecovery, at),
                    port: kill.rec.peer().port(),
                });
                None
            }
            Outcome::Failed(_) => self.ask(kill, RestartReason::KillFailed, at),
            _ => None,
        }
    }

    /// After each sweep: a kill with no healthy connection to its port established since,
    /// for `--escalate-after`, becomes a restart request; a recovery ends the watch (and is
    /// returned with how long it took, for the log).
    pub fn after_sweep(
        &mut self,
        sockets: &[Seen],
        at: Instant,
    ) -> (Vec<RestartRequest>, Vec<(std::net::SocketAddr, Duration)>) {
        let limit = self.escalate_after;
        let mut due = Vec::new();
        let mut back = Vec::new();
        self.watching.retain(|w| {
            let since = at.saturating_duration_since(w.request.at);
            // With an endpoint configured, only its own connection shows a recovery.
            let recovered = sockets.iter().any(|s| {
                s.verdict == Verdict::Healthy
                    && s.endpoint_socket != Some(false)
                    && s.peer.port() == w.port
                    && s.established_age < since
            });
            if recovered {
                back.push((w.request.peer, since));
                return false;
            }
            if since >= limit {
                due.push(RestartRequest {
                    at,
                    verdict: "unrecovered",
                    ..w.request.clone()
                });
                return false;
            }
            true
        });
        (due, back)
    }

    /// Whether a kill awaits a healthy connection to its endpoint (every socket then counts).
    #[must_use]
    pub fn waiting(&self) -> bool {
        !self.watching.is_empty()
    }

    /// Forget sockets that are gone.
    pub fn retain(&mut self, live: impl Fn(u64) -> bool) {
        self.asked.retain(|c| live(*c));
    }
}
