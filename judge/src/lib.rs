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
//! One sweep calls, in order (docs/ARCHITECTURE.md's code map, "The loop's calls into the
//! judge"): `recorded` and `unanswered` for the probe's news; `due`, `in_trouble` and
//! `awaits_recovery` to choose what to visit; `path_down` and `path_back` whenever the loop
//! learns of the path; per visited socket `wants_info` (whether its `tcp_info` must be read)
//! and then `look` (two witnesses, dead peer, orphan: the kill it wants with its evidence,
//! the peer probe, the wake); per kill `quiet`, `current`, `decide` (guard, rate limit,
//! backoff, dry run, `--action restart`) and `outcome`; and `end_sweep` once (confirming
//! looks, scheduled looks, no recovery after a kill). A socket that is gone is `forget`: its
//! whole state is one `SocketState` (`socket.rs`), so that is one remove. Its schedule
//! (`due.rs`, the tally of verdicts) is its own.

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
mod gather;
pub mod idle;
mod inputs;
mod look;
mod path;
mod record;
mod run;
mod socket;
mod stall;
mod stall_rule;
mod surface;
mod tally;
mod ticket;
mod time;
pub mod verdict;

use std::time::Duration;

pub use blip::PROBE_RECHECK;
pub use budget::{Budget, UnitOwned, Whose};
pub use early::Trouble;
pub use endpoint::Seed;
pub use escalate::{Escalation, RestartRequest};
pub use evidence::{DeadPeer, Evidence, PeerProbe, ProbeAsk, SLACK, life};
pub use facts::reported_from;
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

/// A stalled or silent socket is looked at again this soon to confirm it (two looks): the
/// kernel's `tcp_info` says dead twice with no sign of life between. Any sweep in between
/// confirms it sooner (the looks are in a row, not a time apart), so this is the longest the
/// confirmation takes, and it is short: at 500 ms the last dead socket of a node, the one no
/// other socket's news wakes a sweep for, waited the whole of it, which made the flow-only
/// bench rows' tail (p90 3.5 s) 0.4 s longer than their middle. The evidence is the run of
/// unanswered transmissions; a second read after one peer-probe recheck adds what a later one
/// would (an ACK between the two looks ends the verdict either way).
pub const CONFIRM_AFTER: Duration = blip::PROBE_RECHECK;

pub struct Judge {
    settings: Settings,
    /// Every socket's state, in one place (`socket.rs`): forgetting a socket is one remove.
    sockets: socket::Sockets,
    /// The idle rules, and the order of their scheduled looks.
    idle: idle::IdleWatch,
    stall: stall::StallWatch,
    /// The kill budgets and the kill count.
    gate: gate::KillGate,
    /// The escalation's tickets, node-wide: a kill's watch outlives its socket.
    escalation: Option<Escalation>,
    /// The count per verdict, and the order of healthy sockets turning idle.
    tally: tally::Tally,
    /// The sockets looked at in this sweep, for the escalation's check after it.
    seen: Vec<Seen>,
    /// Whether the path to the endpoint went down and came back: the evidence a socket
    /// collected across it must be earned again (`path.rs`; each socket's baseline is its own).
    path: path::PathWatch,
    /// The endpoint sockets' overdue looks, gathered per peer (`gather.rs`).
    gather: gather::Gather,
}

impl Judge {
    #[must_use]
    pub fn new(settings: Settings, escalation: Option<Escalation>) -> Self {
        Self {
            idle: idle::IdleWatch::new(settings.silent, settings.want),
            stall: stall::StallWatch::new(settings.stall.after),
            gate: gate::KillGate::new(settings.max_kills_per_minute),
            settings,
            sockets: socket::Sockets::default(),
            escalation,
            tally: tally::Tally::default(),
            seen: Vec::new(),
            path: path::PathWatch::default(),
            gather: gather::Gather::default(),
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
        let mut fresh = false;
        self.sockets.update_marked(|st| {
            fresh |= st.dead_now && !st.dead_before;
            st.dead_before = std::mem::take(&mut st.dead_now);
        });
        fresh
    }

    /// Everything kept about a socket that is gone: its state is one remove; its slots leave
    /// the two schedules' indexes and its verdict the counts. An escalation watching for a
    /// recovery after its kill stays until the watch ends (that is what it is for).
    pub fn forget(&mut self, cookie: Cookie) {
        if let Some(mut st) = self.sockets.remove(cookie) {
            self.idle.forget(cookie, st.idle_due);
            self.tally.forget(cookie, &mut st);
        }
        if let Some(e) = self.escalation.as_mut() {
            e.retain(|c| c != cookie);
        }
    }

    /// Sockets a rule has business with at `now` whatever the news: a dead verdict
    /// awaiting its confirming look, a migration due, a kill backing off, a look the idle
    /// rules scheduled, a healthy socket whose record turns idle (the counts). The sweep
    /// visits them all.
    pub fn due(&self, now: Mono) -> impl Iterator<Item = Cookie> + '_ {
        self.sockets
            .pending()
            .chain(self.idle.due_now(now))
            .chain(self.tally.settle.due(now))
    }

    /// Whether a record with a trouble episode needs visiting with no news of it: only when
    /// time alone can make it nominate a stall (`verdict::stalls_in_time`: data outstanding
    /// and the RTOs the stall rule needs) and no look's answer holds for the episode
    /// (`stall.rs`). Everything else about an episode comes as news (its start, each RTO)
    /// or through the idle rules' schedule. Visiting every troubled record every sweep
    /// re-read, for nothing, each recovered flow whose one lost segment left its record in
    /// trouble (no callback per ACK): measured, 18 of 40 watched sockets at 5 % loss, a
    /// record lookup each per sweep, and a fresh peer probe each time the last went stale.
    #[must_use]
    pub fn in_trouble(&self, cookie: Cookie, rec: &Record, now: Mono) -> bool {
        verdict::stalls_in_time(rec, self.settings.stall)
            && rec
                .trouble
                .is_some_and(|t| self.held(cookie, t, now).is_none())
    }

    /// The verdict `lifeline status` shows for a socket not visited in the last sweep: the
    /// record's, or the last look's while it holds.
    #[must_use]
    pub(crate) fn between(&self, cookie: Cookie, rec: &Record, now: Mono) -> Verdict {
        let from_record = verdict::from_record(rec, now, self.settings.stall);
        rec.trouble
            .and_then(|t| self.held(cookie, t, now))
            .unwrap_or(from_record)
    }

    /// The kernel's answer of the last look at `cookie`, while it holds for this episode.
    fn held(&self, cookie: Cookie, trouble: Mono, now: Mono) -> Option<Verdict> {
        self.sockets.get(cookie)?.held(trouble, now)
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
mod tests_run;
#[cfg(test)]
mod tests_surface;
