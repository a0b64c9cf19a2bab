//! Dry run observes, Hold holds: while lifeline only observes (`--dry-run`, or the guard holds
//! because no endpoint address accepts a connection), a socket whose silent verdict's
//! evidence is in has its keepalive re-timed so the kernel aborts it no sooner than the
//! application's own settings would (`lifeline_judge::defer` plans it, the TCP iterator
//! applies it), and `--user-timeout` goes back to the application's on sockets in trouble.
//! lifeline's own values come back when the socket answers again or the hold ends. Each
//! deferral is one log line with its evidence (target `lifeline::defer`), beside the
//! decision's own (`outcome: dry-run` or `held`).

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use lifeline_common::{
    Keepalive, SockState,
    keepalive::{KA_OFF, ka_armed},
    restore::Defer,
};

use super::{
    Daemon,
    defer_log::{Observe, Say, log},
};
use crate::judge::{
    Read,
    defer::{self, App},
};

/// Deferred sockets are read at most this often to see whether they answer again.
const POLL: Duration = Duration::from_secs(1);

/// The deferrals in force and the ones to apply at the end of the sweep.
pub struct Deferrals {
    dry_run: bool,
    /// The guard held the last batch of kills.
    holding: bool,
    /// The TCP iterator is there to re-time sockets (Linux 5.15).
    possible: bool,
    /// Unanswered probes from which a silent socket is deferred (`defer::due_from`).
    from: u32,
    /// Deferred sockets: lifeline's values to bring back, and the application's view.
    deferred: HashMap<u64, (Keepalive, App)>,
    /// To apply at the end of this sweep, with what to say.
    pending: Vec<(u64, Defer, Say)>,
    last_poll: Option<Instant>,
}

impl Deferrals {
    #[must_use]
    pub fn new(dry_run: bool, possible: bool, silent_probes: u8, ours: &Keepalive) -> Self {
        Self {
            dry_run,
            holding: false,
            possible,
            from: defer::due_from(silent_probes, ours.cnt),
            deferred: HashMap::new(),
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

    pub fn forget(&mut self, cookie: u64) {
        self.deferred.remove(&cookie);
    }

    /// Sockets deferred now.
    #[must_use]
    pub fn count(&self) -> u64 {
        u64::try_from(self.deferred.len()).unwrap_or(u64::MAX)
    }

    /// `lifeline status`'s `restore on stop` line.
    #[must_use]
    pub const fn restore_text(&self) -> &'static str {
        if self.possible {
            "the application's socket options are put back (TCP iterator); in --dry-run and while holding, the kernel's own keepalive aborts are deferred to the application's own deadline"
        } else {
            "not possible: the options lifeline sets stay on the sockets after it stops, and a hold cannot defer the kernel's own keepalive abort (both need the TCP iterator, Linux 5.15); a dry run arms no keepalive"
        }
    }
}

impl Daemon {
    /// After a socket's look: defer it when lifeline only observes and its evidence is in,
    /// or bring lifeline's values back when it answers again.
    pub(super) fn defer_look(&mut self, cookie: u64, rec: &SockState, read: Option<&Read>) {
        let Some(Read::Info(info)) = read else {
            return;
        };
        let d = &self.defer;
        if d.deferred.contains_key(&cookie) {
            if info.probes == 0 && info.retransmits == 0 {
                self.resume(cookie, "it answered again");
            }
            return;
        }
        let Some(mode) = d.observing() else {
            return;
        };
        let silent = u32::from(info.probes) >= d.from && ka_armed(rec.ka_result);
        let stalled = info.unacked > 0 && info.retransmits > 0;
        if !d.possible || !(silent || stalled) || rec.ka_result == KA_OFF {
            return;
        }
        let Some(app) = self.probe.original(cookie).map(|o| App::from_original(&o)) else {
            return;
        };
        let plan = defer::plan(&app, info);
        let Some(entry) = plan.entry() else {
            return;
        };
        if stalled && plan.user_timeout_ms.is_none() {
            return;
        }
        tracing::debug!(cookie, mode = mode.label(), "deferral due");
        self.defer.deferred.insert(cookie, (rec.keepalive, app));
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
        // The one place the daemon asks the guard whether it holds.
        let holding = self.follow.as_ref().is_some_and(|f| f.guard.holding());
        let ended = self.defer.holding && !holding;
        self.defer.holding = holding;
        if ended && !self.defer.dry_run {
            let all: Vec<u64> = self.defer.deferred.keys().copied().collect();
            for c in all {
                self.resume(c, "the hold ended");
            }
        }
        self.poll_deferred();
        self.apply_pending();
    }

    /// Deferred sockets answer with no news: read them, at most every `POLL`.
    fn poll_deferred(&mut self) {
        if self.defer.deferred.is_empty()
            || self.defer.last_poll.is_some_and(|t| t.elapsed() < POLL)
        {
            return;
        }
        self.defer.last_poll = Some(Instant::now());
        let cookies: Vec<u64> = self.defer.deferred.keys().copied().collect();
        for c in cookies {
            let Some(rec) = self.mirror.get(c).copied() else {
                self.defer.forget(c);
                continue;
            };
            match self.diag.get(rec.local(), rec.peer(), c) {
                Ok(None) => self.defer.forget(c),
                Ok(Some(s)) => {
                    if s.info.is_some_and(|i| i.probes == 0 && i.retransmits == 0) {
                        self.resume(c, "it answered again");
                    }
                }
                Err(_) => {}
            }
        }
    }

    /// Bring lifeline's own values back on `cookie` (at the end of the sweep).
    fn resume(&mut self, cookie: u64, why: &'static str) {
        let Some((ours, app)) = self.defer.deferred.remove(&cookie) else {
            return;
        };
        if self.defer.pending.iter().any(|(c, _, _)| *c == cookie) {
            self.defer.pending.retain(|(c, _, _)| *c != cookie);
            return;
        }
        let entry = defer::resume(&ours, &app);
        self.defer.pending.push((cookie, entry, Say::Resumed(why)));
    }

    fn apply_pending(&mut self) {
        let pending = std::mem::take(&mut self.defer.pending);
        if pending.is_empty() {
            return;
        }
        let entries: Vec<(u64, Defer)> = pending.iter().map(|(c, e, _)| (*c, *e)).collect();
        let after = match self.probe.defer(&entries) {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), sockets = entries.len(),
                    "cannot re-time keepalive through the TCP iterator: the kernel may abort these sockets at lifeline's own count");
                return;
            }
        };
        for ((cookie, entry, say), (_, rec)) in pending.into_iter().zip(after) {
            let Some(rec) = rec else {
                self.defer.forget(cookie);
                continue;
            };
            self.mirror.upsert(cookie, rec);
            log(&rec, &entry, &say);
        }
    }
}
