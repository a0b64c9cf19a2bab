//! Escalation, the daemon's side: when to ask for a restart of `--restart-unit`.
//! - the kill is impossible or failed (e.g. no `SOCK_DESTROY` in the kernel);
//! - after a kill, the owner has no healthy connection to the endpoint within
//!   `--escalate-after` (the client did not re-dial, or cannot);
//! - `--action restart`: every confirmed stall, instead of the kill.
//!
//! Requests go to the restarter task (restarter.rs), which applies the limits, calls systemd
//! and logs the decision. One request per socket: a stall that persists is not re-asked.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use tokio::sync::mpsc;

use crate::{
    action::{Actor, Evidence},
    clock,
    diag::SockDiag,
    node_args::ActionMode,
    status::SocketStatus,
};

/// What the restarter needs to decide and to log the decision.
#[derive(Clone, Debug)]
pub struct Request {
    pub at: Instant,
    /// "kill-failed", "no-recovery" or "action-restart".
    pub reason: &'static str,
    pub verdict: &'static str,
    pub peer: String,
    pub local: String,
    pub owner_pid: u32,
    pub owner_comm: String,
    pub trouble_age_ms: u64,
}

/// A kill whose effect is being watched: did a healthy connection to the port come back?
struct AfterKill {
    request: Request,
    port: u16,
}

pub struct Escalation {
    pub mode: ActionMode,
    pub escalate_after: Duration,
    tx: mpsc::UnboundedSender<Request>,
    asked: HashSet<u64>,
    watching: Vec<AfterKill>,
}

impl Escalation {
    #[must_use]
    pub fn new(
        mode: ActionMode,
        escalate_after: Duration,
        tx: mpsc::UnboundedSender<Request>,
    ) -> Self {
        Self {
            mode,
            escalate_after,
            tx,
            asked: HashSet::new(),
            watching: Vec::new(),
        }
    }

    fn ask(&mut self, cookie: u64, request: Request) {
        if self.asked.insert(cookie) {
            let _ = self.tx.send(request);
        }
    }

    /// After each sweep: a kill with no healthy connection to its port established since,
    /// for `escalate_after`, becomes a restart request; a recovery ends the watch.
    pub fn after_sweep(&mut self, sockets: &[SocketStatus]) {
        let limit = self.escalate_after;
        let mut due = Vec::new();
        self.watching.retain(|w| {
            let since = w.request.at.elapsed();
            let recovered = sockets.iter().any(|s| {
                s.verdict == "healthy"
                    && port_of(&s.peer) == Some(w.port)
                    && Duration::from_millis(s.established_age_ms) < since
            });
            if recovered {
                tracing::info!(peer = %w.request.peer, after_ms = u64::try_from(since.as_millis()).unwrap_or(u64::MAX),
                    "a healthy connection to the endpoint is back after the kill; no restart needed");
                return false;
            }
            if since >= limit {
                due.push(Request { at: Instant::now(), reason: "no-recovery", verdict: "unrecovered", ..w.request.clone() });
                return false;
            }
            true
        });
        for r in due {
            let _ = self.tx.send(r);
        }
    }

    /// Forget sockets that are gone (a new socket may reuse nothing but the cookie space).
    pub fn retain(&mut self, live: impl Fn(u64) -> bool) {
        self.asked.retain(|c| live(*c));
    }
}

fn port_of(addr: &str) -> Option<u16> {
    addr.rsplit_once(':')?.1.parse().ok()
}

fn request(ev: &Evidence<'_>, reason: &'static str) -> Request {
    Request {
        at: Instant::now(),
        reason,
        verdict: "stalled",
        peer: ev.rec.peer().to_string(),
        local: ev.rec.local().to_string(),
        owner_pid: ev.rec.owner_pid,
        owner_comm: ev.rec.comm().unwrap_or("-").to_owned(),
        trouble_age_ms: clock::age_ms(ev.now_ns, ev.rec.trouble_ns),
    }
}

/// The daemon's one call for a confirmed stall: kill (and watch the outcome), or restart.
pub fn act(
    actor: &mut Actor,
    esc: Option<&mut Escalation>,
    diag: &mut SockDiag,
    ev: &Evidence<'_>,
) {
    let Some(esc) = esc else {
        actor.act(diag, ev);
        return;
    };
    if esc.mode == ActionMode::Restart && !actor.dry_run {
        esc.ask(ev.cookie, request(ev, "action-restart"));
        return;
    }
    match actor.act(diag, ev).as_deref() {
        Some("killed") => esc.watching.push(AfterKill {
            request: request(ev, "no-recovery"),
            port: ev.rec.peer().port(),
        }),
        Some(o) if o.starts_with("failed") => esc.ask(ev.cookie, request(ev, "kill-failed")),
        _ => {}
    }
}
