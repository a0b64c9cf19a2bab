//! The agent's loop: read the probe's records and the kernel's state, ask the judge, carry
//! out its decisions, publish status. All the I/O is here; all the rules are in `judge`.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use anyhow::Result;
use lifeline_common::{SockState, config::stats};
use tokio::sync::{mpsc, watch};

use crate::{
    act, clock,
    diag::SockDiag,
    endpoint::{Follow, guard},
    judge::{self, Action, Judge, Kill, Read, RestartRequest, Seen, Socket},
    probe::Probe,
    snapshot,
    status::Snapshot,
};

pub struct Daemon {
    pub probe: Probe,
    pub diag: SockDiag,
    /// Pre-existing sockets the probe could not arm: judged from `tcp_info` alone.
    pub polled: HashSet<u64>,
    pub judge: Judge,
    pub status: watch::Sender<Snapshot>,
    pub sockets_full: u64,
    /// Sockets whose state could not be read, already reported (reported once each).
    pub unreadable: HashSet<u64>,
    /// Restart requests to the restarter task; None without --restart-unit.
    pub restarts: Option<mpsc::UnboundedSender<RestartRequest>>,
    /// Following the API endpoint; `None` when no endpoint is configured.
    pub follow: Option<Follow>,
    /// Target cgroups and endpoint peers, kept current every sweep.
    pub watching: crate::watch::Watching,
    /// The probe's news, collected by the ring-buffer reader.
    pub news: crate::readers::Inbox,
}

impl Daemon {
    /// One sweep: judge every record, decide, act, publish status. Returns how soon the
    /// next sweep is due (a dead socket awaiting its confirming look, a jittered kill, a
    /// held batch's re-check), at most `interval`.
    ///
    /// # Errors
    /// When the probe's maps cannot be read.
    pub async fn sweep(&mut self, interval: Duration) -> Result<Duration> {
        let armed = self.judge.settings.want != lifeline_common::Keepalive::default();
        let adopted =
            self.watching
                .sync(&mut self.probe, &mut self.diag, self.follow.as_ref(), armed);
        self.polled.extend(adopted);
        drop(self.news.take());
        let now = clock::now_ns();
        let at = Instant::now();
        self.check_capacity()?;
        let records = self.probe.sockets()?;
        let mut rows = Vec::with_capacity(records.len());
        let mut seen = Vec::with_capacity(records.len());
        let mut kills = Vec::new();
        let mut wake = interval;
        for (cookie, rec) in &records {
            let member = self
                .follow
                .as_ref()
                .and_then(|f| f.endpoints.membership(rec.peer(), f.grace));
            let dead_since = self
                .follow
                .as_ref()
                .and_then(|f| f.prober.dead_since(rec.peer()));
            let s = Socket {
                cookie: *cookie,
                rec,
                polled: self.polled.contains(cookie),
                member: member.as_ref(),
                dead_since,
            };
            let read = self
                .judge
                .wants_info(&s, now, at)
                .then(|| self.read(*cookie, rec));
            let Some((verdict, info)) = self.judge.verdict(&s, read.as_ref(), now) else {
                self.probe.forget(*cookie);
                self.polled.remove(cookie);
                continue;
            };
            let mut reason = self
                .judge
                .confirmed(*cookie, verdict, info.as_ref())
                .then_some(judge::Reason::Dead(verdict));
            if reason.is_none() && self.follow.is_some() {
                let call = self.judge.endpoint_reason(&s, verdict, info.as_ref(), at);
                if let (Some(why), Some(f)) = (call.probe, self.follow.as_ref()) {
                    f.prober.request(rec.peer(), why);
                }
                if let Some((endpoint, absent_for)) = &call.report_orphan {
                    act::log_orphan_report(rec, endpoint, *absent_for);
                }
                wake = wake.min(call.wake.unwrap_or(interval));
                reason = call.reason;
            }
            if let (Some(reason), Some(info)) = (reason, info) {
                kills.push(Kill {
                    cookie: *cookie,
                    now_ns: now,
                    rec: *rec,
                    info,
                    reason,
                });
            }
            let keepalive = judge::idle::describe(rec, &self.judge.idle.want, self.probe.can_adopt);
            let mut row = snapshot::row(*cookie, rec, info.as_ref(), verdict, keepalive, now);
            row.endpoint = member.as_ref().map(|m| m.0.clone());
            row.endpoint_member = member.map(|m| m.1.label().to_owned());
            seen.push(Seen {
                peer: rec.peer(),
                verdict,
                established_age: Duration::from_millis(row.established_age_ms),
            });
            rows.push(row);
        }
        self.execute(&kills).await;
        let live: HashSet<u64> = records.iter().map(|(c, _)| *c).collect();
        if self.judge.end_sweep(&live) {
            wake = wake.min(judge::CONFIRM_AFTER);
        }
        if let Some(due) = self.judge.idle.next_due(clock::now_ns()) {
            wake = wake.min(due.max(Duration::from_millis(50)));
        }
        if let Some(t) = self.follow.as_ref().and_then(|f| f.guard.next_check()) {
            wake = wake.min(
                t.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(50)),
            );
        }
        self.unreadable.retain(|c| live.contains(c));
        self.after_sweep(&seen);
        self.publish(rows);
        Ok(wake)
    }

    /// The kernel's `tcp_info` for one socket.
    fn read(&mut self, cookie: u64, rec: &SockState) -> Read {
        match self.diag.get(rec.local(), rec.peer(), cookie) {
            Ok(None) => Read::Gone,
            Ok(Some(d)) => d.info.map_or(Read::NoInfo, Read::Info),
            Err(e) => {
                self.report_unreadable(cookie, rec, &e);
                Read::Unreadable
            }
        }
    }

    /// Carry out a batch of confirmed kills: ask the guard once for the batch (a connect
    /// test when its answer is stale), then each kill's action, outcome and log.
    async fn execute(&mut self, kills: &[Kill]) {
        if kills.is_empty() {
            return;
        }
        let healthy = match self.follow.as_mut() {
            None => guard::Verdict::Go,
            Some(f) => match f.guard.before(!f.endpoints.is_empty(), Instant::now()) {
                guard::Step::Known(v) => v,
                guard::Step::Check => {
                    let ok = f.endpoints.any_accepts().await;
                    f.guard.after(ok, Instant::now())
                }
            },
        };
        if healthy == guard::Verdict::Wait {
            return;
        }
        for kill in kills {
            let at = Instant::now();
            let action = self.judge.gate(kill, healthy == guard::Verdict::Go, at);
            if action == Action::Restart {
                let req = self
                    .judge
                    .escalation
                    .as_mut()
                    .and_then(|e| e.restart_instead(kill, at));
                self.request_restart(req);
                continue;
            }
            let Some(outcome) = act::execute(&mut self.diag, kill, action) else {
                continue;
            };
            act::log_decision(kill, action, &outcome);
            let req = self.judge.outcome(kill, &outcome, at);
            self.request_restart(req);
        }
    }

    fn after_sweep(&mut self, seen: &[Seen]) {
        let Some(esc) = self.judge.escalation.as_mut() else {
            return;
        };
        let (due, back) = esc.after_sweep(seen, Instant::now());
        for (peer, after) in back {
            tracing::info!(peer = %peer, after_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                "a healthy connection to the endpoint is back after the kill; no restart needed");
        }
        for r in due {
            self.request_restart(Some(r));
        }
    }

    fn request_restart(&self, req: Option<RestartRequest>) {
        if let (Some(tx), Some(r)) = (self.restarts.as_ref(), req) {
            let _ = tx.send(r);
        }
    }

    fn publish(&mut self, sockets: Vec<crate::status::SocketStatus>) {
        if let Some(f) = &self.follow {
            f.prober.prune();
        }
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.status.send_replace(Snapshot {
            stall_timeout_ms: ms(self.judge.settings.stall),
            silent_timeout_ms: self.judge.idle.silent.map(|s| ms(s.after)),
            kills: self.judge.kills(),
            holds: self.follow.as_ref().map_or(0, |f| f.guard.holds),
            endpoint_source: self.follow.as_ref().map(|f| f.source.to_string()),
            sockets_full: self.sockets_full,
            endpoints: self
                .follow
                .as_ref()
                .map(|f| f.endpoints.status(Instant::now()))
                .unwrap_or_default(),
            targets: self.watching.status.clone(),
            sockets,
        });
    }

    pub(crate) fn report_unreadable(
        &mut self,
        cookie: u64,
        rec: &SockState,
        e: &crate::diag::DiagError,
    ) {
        if self.unreadable.insert(cookie) {
            crate::metrics::get().decision(&crate::metrics::Decision {
                verdict: "unknown",
                action: "none",
                outcome: "unreadable",
                trouble_age_ms: 0,
            });
            tracing::warn!(target: "lifeline::decision", peer = %rec.peer(), local = %rec.local(), action = "none",
                outcome = "unreadable", error = %e, "cannot read the kernel's state of a suspect socket; not acting on it");
        }
    }

    /// A full map means sockets go unwatched: say so loudly, every time it grows.
    fn check_capacity(&mut self) -> Result<()> {
        let full = self.probe.stats()?[stats::SOCKETS_FULL as usize];
        if full > self.sockets_full {
            tracing::error!(
                not_watched = full,
                new = full - self.sockets_full,
                "SOCKETS map is full: new sockets are NOT watched; raise --max-sockets"
            );
            self.sockets_full = full;
        }
        Ok(())
    }
}
