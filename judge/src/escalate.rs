//! Escalation, the rules: when to ask for a restart of `--restart-unit`, and only ever for a
//! socket of that unit's own cgroup (`Whose::unit`; another process's socket is killed as
//! before but never restarts the unit):
//! - the kill failed (e.g. no `SOCK_DESTROY` in the kernel, no `CAP_NET_ADMIN`); a socket
//!   already gone is no failure;
//! - after a kill, no healthy connection to the same port (to the endpoint, when one is
//!   configured: its own connection, `endpoint::Members`) is established within
//!   `--escalate-after` (the client did not re-dial, or cannot);
//! - `--action restart`: a confirmed failure (stalled, silent, dead peer) restarts instead of
//!   killing; an orphan migration is hygiene, not a failure, and is still a kill.
//!
//! One record per socket, with a `Ticket` shared with the restarter task
//! (`act/restart/restarter.rs`), which applies the hourly budget, the pause and the endpoint
//! check, calls systemd and logs.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use super::{
    Cookie, Kill, Mono, Outcome, Seen, Verdict,
    budget::{Budget, UnitOwned},
    ticket::{Stage, Ticket},
};
use crate::ActionMode;

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
    pub at: Mono,
    pub reason: RestartReason,
    /// The socket's real verdict ("stalled", "silent", "dead-peer"), or "unrecovered".
    pub verdict: &'static str,
    pub peer: std::net::SocketAddr,
    pub local: std::net::SocketAddr,
    pub owner_pid: u32,
    pub owner_comm: String,
    pub trouble_age_ms: u64,
    /// This kill's escalation: the restarter takes it before restarting, or finds it
    /// recovered and does nothing.
    pub ticket: Ticket,
}

/// The one record of a socket that was asked about or killed.
struct Request {
    request: RestartRequest,
    /// A kill watched for a healthy connection to this port (else asked at once).
    port: Option<u16>,
}

pub struct Escalation {
    mode: ActionMode,
    escalate_after: Duration,
    /// By socket cookie: a second kill or request for the same socket cannot exist.
    records: HashMap<Cookie, Request>,
    /// Targets whose sockets were found not to be the unit's, said once each.
    told: HashSet<Budget>,
}

impl Escalation {
    #[must_use]
    pub fn new(mode: ActionMode, escalate_after: Duration) -> Self {
        Self {
            mode,
            escalate_after,
            records: HashMap::new(),
            told: HashSet::new(),
        }
    }

    #[must_use]
    pub(crate) fn restarts_instead(&self) -> bool {
        self.mode == ActionMode::Restart
    }

    fn request(kill: &Kill, reason: RestartReason, at: Mono, stage: Stage) -> RestartRequest {
        RestartRequest {
            ticket: Ticket::new(stage),
            at,
            reason,
            verdict: kill.reason.verdict(),
            peer: kill.rec.peer,
            local: kill.rec.local,
            owner_pid: kill.rec.owner_pid,
            owner_comm: kill.rec.comm().unwrap_or("-").to_owned(),
            trouble_age_ms: kill
                .rec
                .trouble
                .map_or(0, |t| kill.evidence.at().ms_since(t)),
        }
    }

    /// Once per socket, and only for the unit's own: a stall that persists is not asked
    /// about again.
    fn ask(&mut self, kill: &Kill, reason: RestartReason, at: Mono) -> Option<RestartRequest> {
        if kill.whose.unit != UnitOwned::Yes || self.records.contains_key(&kill.cookie) {
            return None;
        }
        let request = Self::request(kill, reason, at, Stage::Asked);
        let record = Request {
            request: request.clone(),
            port: None,
        };
        self.records.insert(kill.cookie, record);
        Some(request)
    }

    /// `--action restart` for a confirmed failure of the unit's socket.
    pub(crate) fn restart_instead(&mut self, kill: &Kill, at: Mono) -> Option<RestartRequest> {
        self.ask(kill, RestartReason::ActionRestart, at)
    }

    pub(super) fn after_outcome(
        &mut self,
        kill: &Kill,
        outcome: &Outcome,
        at: Mono,
    ) -> Option<RestartRequest> {
        match outcome {
            Outcome::Killed
                if kill.reason.is_failure()
                    && kill.whose.unit == UnitOwned::Yes
                    && !self.records.contains_key(&kill.cookie) =>
            {
                let request = Self::request(kill, RestartReason::NoRecovery, at, Stage::Watching);
                let port = Some(kill.rec.peer.port());
                self.records.insert(kill.cookie, Request { request, port });
                None
            }
            Outcome::Failed(_) => self.ask(kill, RestartReason::KillFailed, at),
            _ => None,
        }
    }

    /// Whether to say that this failure of a socket outside the unit restarts nothing:
    /// true the first time for its target.
    pub(crate) fn first_outside(&mut self, kill: &Kill) -> bool {
        kill.reason.is_failure()
            && kill.whose.unit != UnitOwned::Yes
            && self.told.insert(kill.whose.budget.clone())
    }

    /// After each sweep: a kill with no healthy connection to its port established since,
    /// for `--escalate-after`, becomes a restart request; a recovery ends the watch (and is
    /// returned with how long it took, for the log) unless the restarter took it first.
    pub(crate) fn after_sweep(
        &mut self,
        sockets: &[Seen],
        at: Mono,
    ) -> (Vec<RestartRequest>, Vec<(std::net::SocketAddr, Duration)>) {
        let limit = self.escalate_after;
        let mut due = Vec::new();
        let mut back = Vec::new();
        self.records.retain(|_, r| {
            let Some(port) = r.port else {
                return true; // asked at once; kept while its socket lives (`retain`)
            };
            let ticket = &r.request.ticket;
            if !ticket.open() {
                return false; // taken, declined or recovered: this kill is done
            }
            let since = at.saturating_duration_since(r.request.at);
            // With an endpoint configured, only its own connection shows a recovery.
            let recovered = sockets.iter().any(|s| {
                s.verdict == Verdict::Healthy
                    && s.endpoint_socket != Some(false)
                    && s.peer.port() == port
                    && s.established_age < since
            });
            if recovered {
                if ticket.recover() {
                    back.push((r.request.peer, since));
                    return false;
                }
                return true; // the restarter took it a moment ago: its outcome is logged there
            }
            if since >= limit && ticket.ask() {
                due.push(RestartRequest {
                    at,
                    verdict: "unrecovered",
                    ..r.request.clone()
                });
            }
            true
        });
        (due, back)
    }

    /// Whether a kill awaits a healthy connection to its endpoint (every socket then counts).
    #[must_use]
    pub(crate) fn waiting(&self) -> bool {
        self.records
            .values()
            .any(|r| r.port.is_some() && r.request.ticket.open())
    }

    /// Forget sockets that are gone; a killed socket's watch outlives it until it ends.
    pub(crate) fn retain(&mut self, live: impl Fn(Cookie) -> bool) {
        self.records
            .retain(|c, r| live(*c) || (r.port.is_some() && r.request.ticket.open()));
    }
}
