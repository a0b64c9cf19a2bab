//! Dry run observes, Hold holds: while lifeline only observes (`--dry-run`, or the guard holds
//! because no endpoint address accepts a connection), a socket whose silent verdict's
//! evidence is in has its keepalive re-timed so the kernel aborts it no sooner than the
//! application's own settings would (`lifeline_judge::defer` plans it, the TCP iterator
//! applies it), and `--user-timeout` goes back to the application's on sockets in trouble.
//! lifeline's own values come back when the socket answers again or the hold ends. Each
//! deferral is one log line with its evidence (target `lifeline::defer`), beside the
//! decision's own (`outcome: dry-run` or `held`).

use lifeline_common::restore::Defer;

use super::{
    Daemon,
    defer_log::{Observe, Say},
};
use crate::judge::{
    Arming, Cookie, Mono, Read, Record, TcpInfo,
    defer::{self, App},
};

/// The deferrals in force and the ones to apply at the end of the sweep.
pub(crate) struct Deferrals {
    pub(super) dry_run: bool,
    /// The guard held the last batch of kills.
    pub(super) holding: bool,
    /// The TCP iterator is there to re-time sockets (Linux 5.15).
    pub(super) possible: bool,
    /// `--silent-probes`: a socket is deferred once its evidence is in (`defer::due_from`).
    pub(super) silent_probes: u8,
    /// To apply at the end of this sweep, with what to say.
    pub(super) pending: Vec<(Cookie, Defer, Say)>,
    pub(super) last_poll: Option<Mono>,
}

impl Deferrals {
    #[must_use]
    pub(crate) fn new(dry_run: bool, possible: bool, silent_probes: u8) -> Self {
        Self {
            dry_run,
            holding: false,
            possible,
            silent_probes,
            pending: Vec::new(),
            last_poll: None,
        }
    }

    fn observing(&self) -> Option<Observe> {
        if self.dry_run {
            Some(Observe::DryRun)
        } else {
            self.holding.then_some(Observe::Hold)
        }
    }

    /// `lifeline status`'s `restore on stop` line.
    #[must_use]
    pub(crate) const fn restore_text(&self) -> &'static str {
        if self.possible {
            "the application's socket options are put back (TCP iterator); in --dry-run and while holding, the kernel's own keepalive aborts are deferred to the application's own deadline"
        } else {
            "not possible: the options lifeline sets stay on the sockets after it stops, and a hold cannot defer the kernel's own keepalive abort (both need the TCP iterator, Linux 5.15); a dry run arms no keepalive"
        }
    }
}

impl Daemon {
    /// Whether `cookie`'s deferral is due at its first unanswered probe (lifeline only
    /// observes, and the count in force ends the socket before the silent verdict's probes
    /// are in, `defer::due_from`): then that probe's news is worth a look.
    pub(super) fn defer_due_at_first(&self, cookie: Cookie) -> bool {
        self.defer.observing().is_some()
            && self
                .mirror
                .get(cookie)
                .is_some_and(|r| defer::due_from(self.defer.silent_probes, r.keepalive.cnt) <= 1)
    }

    /// After a socket's look: defer it when lifeline only observes and its evidence is in,
    /// or bring lifeline's values back when it answers again.
    pub(super) fn defer_look(&mut self, cookie: Cookie, rec: &Record, read: Option<&Read>) {
        if let Some(Read::Info(info)) = read {
            self.defer_seen(cookie, rec, info);
        }
    }

    /// What a read of `cookie`'s `tcp_info` means for its deferral: bring lifeline's values
    /// back once it answers; plan again when the application set other values since; defer
    /// it when lifeline only observes and its evidence is in.
    pub(super) fn defer_seen(&mut self, cookie: Cookie, rec: &Record, info: &TcpInfo) {
        let app_now = || self.kernel.original(cookie).map(|o| App::from_original(&o));
        let mut ours = rec.keepalive;
        if let Some((was, app)) = self.tracked.deferred(cookie) {
            if info.probes == 0 && info.retransmits == 0 {
                self.resume(cookie, "it answered again");
                return;
            }
            if app_now().is_none_or(|a| a == app) {
                return;
            }
            // The application set its own values since: planned again, lifeline's kept.
            self.tracked.undefer(cookie);
            ours = was;
        }
        let d = &self.defer;
        let Some(mode) = d.observing() else {
            return;
        };
        let from = defer::due_from(d.silent_probes, rec.keepalive.cnt);
        let silent = u32::from(info.probes) >= from && rec.arming.in_force();
        let stalled = info.unacked > 0 && info.retransmits > 0;
        if !d.possible || !(silent || stalled) || rec.arming == Arming::Off {
            return;
        }
        let Some(app) = app_now() else {
            return;
        };
        let plan = defer::plan(&app, info);
        let Some(entry) = plan.entry() else {
            return;
        };
        if stalled && plan.user_timeout_ms.is_none() {
            return;
        }
        tracing::debug!(cookie = cookie.0, mode = mode.label(), "deferral due");
        self.tracked.defer(cookie, (ours, app));
        let say = Say::Deferred {
            mode,
            plan,
            app,
            info: *info,
        };
        self.defer.pending.push((cookie, entry, say));
    }

    /// End of a sweep: the guard's state, deferred sockets that answered or closed, then one
    /// iterator pass for whatever is pending.
    pub(super) fn defer_sweep(&mut self) {
        // The one place the daemon asks the guard whether it holds; the judge knows the path
        // to the endpoint down too (a peer probe found no address accepting: no kill until it
        // is back, `judge/src/path.rs`), which holds just the same.
        let holding = self.follow.as_ref().is_some_and(|f| f.guard.holding())
            || self.judge.path_down_since().is_some();
        let ended = self.defer.holding && !holding;
        self.defer.holding = holding;
        if ended && !self.defer.dry_run {
            for c in self.tracked.deferred_cookies() {
                self.resume(c, "the hold ended");
            }
        }
        self.poll_deferred();
        self.apply_pending();
    }

    /// Bring lifeline's own values back on `cookie` (at the end of the sweep).
    pub(super) fn resume(&mut self, cookie: Cookie, why: &'static str) {
        let Some((ours, app)) = self.tracked.undefer(cookie) else {
            return;
        };
        if self.defer.pending.iter().any(|(c, _, _)| *c == cookie) {
            self.defer.pending.retain(|(c, _, _)| *c != cookie);
            return;
        }
        let entry = defer::resume(&ours, &app);
        self.defer.pending.push((cookie, entry, Say::Resumed(why)));
    }
}
