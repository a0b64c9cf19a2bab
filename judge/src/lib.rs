//! The judge: every rule that turns what the kernel says into a decision, and nothing else.
//! A crate of its own so the compiler keeps it pure: it depends on `lifeline-common`'s plain
//! types and serde, never on aya, tokio, netlink, clap or a tracing subscriber, and reads no
//! clock. The agent's loop (`daemon/`) reads the probe's map, `sock_diag` and the endpoint
//! view, hands them in with the clock, carries out the typed decisions that come back
//! (kills, restart requests, peer probes), and reports each outcome; logs, metrics and
//! status consume the same values. Its one random input, the seed of the jittered moments,
//! is handed in too (`Settings::seed`). So every rule has a unit test that needs no root,
//! and gives the same answer on every run.
//!
//! One sweep asks, per socket, `wants_info` (whether its `tcp_info` must be read) and then
//! `look` (two witnesses, dead peer, orphan: the kill it wants, the peer probe, the wake);
//! per kill `quiet`, `decide` (guard, rate limit, backoff, dry run, `--action restart`) and
//! `outcome`; and `end_sweep` once (confirming looks, scheduled looks, no recovery after a
//! kill). Its schedule (`judge/src/due.rs`, the tally of verdicts) is its own.

mod blip;
mod budget;
pub mod defer;
mod due;
mod early;
mod endpoint;
mod escalate;
mod evidence;
mod facts;
mod gate;
pub mod idle;
mod inputs;
mod look;
mod path;
mod record;
mod stall;
mod stall_rule;
mod surface;
mod tally;
mod ticket;
mod time;
pub mod verdict;

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

pub use budget::{Budget, UnitOwned, Whose};
pub use early::Trouble;
pub use endpoint::Seed;
pub use escalate::{Escalation, RestartRequest};
pub use evidence::{DeadPeer, Evidence, PeerProbe, ProbeAsk, SLACK, life};
pub use gate::{Action, Kill, Outcome, Reason};
pub use inputs::{ActionMode, Membership, Read, Seen, Socket, TcpInfo};
pub use path::{FRESH_PROBES, FRESH_RTOS};
pub use record::{
    Adoption, Arming, Comm, Deferred, Errno, LinearTimeouts, Origin, Record, TcpState,
};
pub use stall_rule::Stall;
pub use surface::{Decision, Look, SweepEnd};
pub use ticket::Stage;
pub use time::{Cookie, Mono};
pub use verdict::Verdict;

/// Everything the rules depend on, fixed at start from the flags and the config file.
#[derive(Clone, Debug)]
pub struct Settings {
    pub stall: Stall,
    /// The silent rule; None when keepalive is off.
    pub silent: Option<Silence>,
    pub want: lifeline_common::Keepalive,
    /// `--on-orphan migrate`.
    pub migrate: bool,
    pub spread: Duration,
    pub dry_run: bool,
    pub max_kills_per_minute: u32,
    /// Where the jittered moments come from (dead-peer kills, orphan migrations).
    pub seed: Seed,
}

/// When an idle socket is silent (dead): at least `probes` keepalive probes unanswered in a
/// row and nothing at all received from the peer for `after`. The kernel's `tcp_info`
/// carries both (`tcpi_probes`, `tcpi_last_ack_recv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Silence {
    pub after: Duration,
    pub probes: u8,
}

/// A stalled or silent socket is looked at again this soon to confirm it (two looks).
pub const CONFIRM_AFTER: Duration = Duration::from_millis(500);

pub struct Judge {
    settings: Settings,
    idle: idle::IdleWatch,
    stall: stall::StallWatch,
    /// Stalled or silent in the previous sweep: a kill needs two looks in a row.
    seen_dead: HashSet<Cookie>,
    dead_now: HashSet<Cookie>,
    /// When each orphaned socket is due to be migrated.
    migrations: HashMap<Cookie, Mono>,
    /// When each socket whose peer left and whose round trip failed migrates (`early.rs`).
    early: HashMap<Cookie, Mono>,
    /// Orphans already reported under `--on-orphan log`.
    orphans_logged: HashSet<Cookie>,
    gate: gate::Gate,
    escalation: Option<Escalation>,
    /// Each socket's verdict from its last look, and the count per verdict.
    tally: tally::Tally,
    /// The sockets looked at in this sweep, for the escalation's check after it.
    seen: Vec<Seen>,
    /// Whether the path to the endpoint went down and came back: the evidence a socket
    /// collected across it must be earned again (`path.rs`).
    path: path::PathWatch,
}

impl Judge {
    #[must_use]
    pub fn new(settings: Settings, escalation: Option<Escalation>) -> Self {
        Self {
            idle: idle::IdleWatch::new(settings.silent, settings.want),
            stall: stall::StallWatch::new(settings.stall.after),
            gate: gate::Gate::new(settings.max_kills_per_minute),
            settings,
            seen_dead: HashSet::new(),
            dead_now: HashSet::new(),
            migrations: HashMap::new(),
            early: HashMap::new(),
            orphans_logged: HashSet::new(),
            escalation,
            tally: tally::Tally::default(),
            seen: Vec::new(),
            path: path::PathWatch::default(),
        }
    }

    /// Kills so far.
    #[must_use]
    pub fn kills(&self) -> u64 {
        self.gate.kills
    }

    /// End of a sweep: the dead set becomes the previous look. Returns whether a new dead
    /// socket awaits its confirming look.
    fn turn_looks(&mut self) -> bool {
        let fresh = self.dead_now.iter().any(|c| !self.seen_dead.contains(c));
        self.seen_dead = std::mem::take(&mut self.dead_now);
        fresh
    }

    /// Everything kept about a socket that is gone.
    pub fn forget(&mut self, cookie: Cookie) {
        self.seen_dead.remove(&cookie);
        self.dead_now.remove(&cookie);
        self.gate.retain(|c| c != cookie);
        self.idle.forget(cookie);
        self.stall.retain(|c| c != cookie);
        self.migrations.remove(&cookie);
        self.early.remove(&cookie);
        self.orphans_logged.remove(&cookie);
        self.tally.remove(cookie);
        self.path.forget(cookie);
        if let Some(e) = self.escalation.as_mut() {
            e.retain(|c| c != cookie);
        }
    }

    /// Sockets a rule has business with at `now` whatever the news: a dead verdict
    /// awaiting its confirming look, a migration due, a kill backing off, a look the idle
    /// rules scheduled, a healthy socket whose record turns idle (the counts). The sweep
    /// visits them all.
    pub fn due(&self, now: Mono) -> impl Iterator<Item = Cookie> + '_ {
        self.seen_dead
            .iter()
            .chain(self.migrations.keys())
            .chain(self.early.keys())
            .chain(self.gate.backoff_cookies())
            .copied()
            .chain(self.idle.due_now(now))
            .chain(self.tally.settle.due(now))
    }

    /// Whether a record with a trouble episode still needs visiting: no look has found the
    /// episode over (nothing outstanding).
    #[must_use]
    pub fn in_trouble(&self, cookie: Cookie, rec: &Record, now: Mono) -> bool {
        rec.trouble
            .is_some_and(|t| self.stall.held(cookie, t, now) != Some(Verdict::Idle))
    }

    /// The verdict `lifeline status` shows for a socket not visited in the last sweep: the
    /// record's, or the last look's while it holds.
    #[must_use]
    pub(crate) fn between(&self, cookie: Cookie, rec: &Record, now: Mono) -> Verdict {
        let from_record = verdict::from_record(rec, now, self.settings.stall);
        rec.trouble
            .and_then(|t| self.stall.held(cookie, t, now))
            .unwrap_or(from_record)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_blip;
#[cfg(test)]
mod tests_early;
#[cfg(test)]
mod tests_early_edges;
#[cfg(test)]
mod tests_endpoint;
#[cfg(test)]
mod tests_escalate;
#[cfg(test)]
mod tests_gate;
#[cfg(test)]
mod tests_jitter;
#[cfg(test)]
mod tests_looks;
#[cfg(test)]
mod tests_members;
#[cfg(test)]
mod tests_surface;
