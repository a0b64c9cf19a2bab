//! The agent's loop: sweep the probe's records, decide, act, publish status.

use std::{
    collections::{HashMap, HashSet},
    time::{Duration, Instant},
};

use anyhow::Result;
use lifeline_common::{SockState, config::stats};
use tokio::sync::watch;

use crate::{
    action::{Actor, Evidence, Reason},
    clock,
    diag::{SockDiag, TcpInfo},
    endpoint::{Follow, guard},
    idle::{self, IdleWatch},
    probe::Probe,
    snapshot,
    status::Snapshot,
};

pub struct Daemon {
    pub probe: Probe,
    pub diag: SockDiag,
    /// Pre-existing sockets the probe could not arm: judged from `tcp_info` alone.
    pub polled: HashSet<u64>,
    pub stall: Duration,
    pub actor: Actor,
    pub status: watch::Sender<Snapshot>,
    /// Stalled or silent sockets seen in the previous sweep: a kill needs two looks in a row.
    pub seen_dead: HashSet<u64>,
    /// When idle sockets are due a keepalive look.
    pub idle: IdleWatch,
    pub sockets_full: u64,
    /// Sockets whose state could not be read, already reported (reported once each).
    pub unreadable: HashSet<u64>,
    /// Restart escalation; None without --restart-unit.
    pub escalation: Option<crate::systemd::escalate::Escalation>,
    /// Following the API endpoint; `None` when no endpoint is configured.
    pub follow: Option<Follow>,
    /// When each orphaned socket is due to be migrated (jittered over `--migrate-spread`).
    pub migrations: HashMap<u64, Instant>,
    /// Orphaned sockets already reported under `--on-orphan log`.
    pub orphans_logged: HashSet<u64>,
    /// Target cgroups and endpoint peers, kept current every sweep.
    pub watching: crate::watch::Watching,
}

/// How soon a stalled or silent socket is looked at again to confirm it.
pub const CONFIRM_AFTER: Duration = Duration::from_millis(500);

impl Daemon {
    /// One sweep: judge every record, decide, act, publish status. Returns how soon the
    /// next sweep is due (a dead socket awaiting its confirming look, a jittered kill, a
    /// held batch's re-check), at most `interval`.
    ///
    /// # Errors
    /// When the probe's maps cannot be read.
    pub async fn sweep(&mut self, interval: Duration) -> Result<Duration> {
        let armed = self.idle.want != lifeline_common::Keepalive::default();
        let adopted =
            self.watching
                .sync(&mut self.probe, &mut self.diag, self.follow.as_ref(), armed);
        self.polled.extend(adopted);
        let now = clock::now_ns();
        let at = Instant::now();
        self.check_capacity()?;
        let records = self.probe.sockets()?;
        let mut dead_now = HashSet::new();
        let mut out = Vec::with_capacity(records.len());
        let mut kills = Vec::new();
        let mut wake = interval;
        for (cookie, rec) in &records {
            let Some((verdict, mut info)) = self.judge(*cookie, rec, now) else {
                continue;
            };
            let member = self
                .follow
                .as_ref()
                .and_then(|f| f.endpoints.membership(rec.peer(), f.grace));
            let mut reason = None;
            if verdict.is_dead() {
                dead_now.insert(*cookie);
                if self.seen_dead.contains(cookie) && info.is_some() {
                    reason = Some(Reason::Dead(verdict));
                }
            }
            if reason.is_none() && self.follow.is_some() {
                let (r, due) =
                    self.endpoint_reason(*cookie, rec, verdict, &mut info, member.as_ref(), at);
                reason = r;
                wake = wake.min(due);
            }
            if let (Some(reason), Some(info)) = (reason, info) {
                kills.push((*cookie, *rec, info, reason));
            }
            let keepalive = idle::describe(rec, &self.idle.want, self.probe.can_adopt);
            let mut row = snapshot::row(*cookie, rec, info.as_ref(), verdict, keepalive, now);
            row.endpoint = member.as_ref().map(|m| m.0.clone());
            row.endpoint_member = member.map(|m| m.1.label().to_owned());
            out.push(row);
        }
        if dead_now.iter().any(|c| !self.seen_dead.contains(c)) {
            wake = wake.min(CONFIRM_AFTER);
        }
        self.seen_dead = dead_now;
        self.execute(&kills, now).await;
        if let Some(t) = self.follow.as_ref().and_then(|f| f.guard.next_check()) {
            wake = wake.min(
                t.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(50)),
            );
        }
        let live: HashSet<u64> = records.iter().map(|(c, _)| *c).collect();
        self.actor.retain(|c| live.contains(&c));
        self.idle.retain(|c| live.contains(&c));
        self.unreadable.retain(|c| live.contains(c));
        if let Some(esc) = self.escalation.as_mut() {
            esc.after_sweep(&out);
            esc.retain(|c| live.contains(&c));
        }
        self.migrations.retain(|c, _| live.contains(c));
        if let Some(f) = &self.follow {
            f.prober.prune();
        }
        self.status.send_replace(Snapshot {
            stall_timeout_ms: u64::try_from(self.stall.as_millis()).unwrap_or(u64::MAX),
            silent_timeout_ms: self
                .idle
                .silent
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            kills: self.actor.kills,
            holds: self.follow.as_ref().map_or(0, |f| f.guard.holds),
            endpoint_source: self.follow.as_ref().map(|f| f.source.to_string()),
            sockets_full: self.sockets_full,
            endpoints: self
                .follow
                .as_ref()
                .map(|f| f.endpoints.status(Instant::now()))
                .unwrap_or_default(),
            targets: self.watching.status.clone(),
            sockets: out,
        });
        Ok(wake)
    }

    /// Kill the batch, unless no endpoint is healthy: then hold it, say so, and re-check
    /// with backoff.
    async fn execute(&mut self, kills: &[(u64, SockState, TcpInfo, Reason)], now: u64) {
        if kills.is_empty() {
            return;
        }
        let verdict = match self.follow.as_mut() {
            Some(f) => f.guard.check(&f.endpoints).await,
            None => guard::Verdict::Go,
        };
        for (cookie, rec, info, reason) in kills {
            let ev = Evidence {
                cookie: *cookie,
                rec,
                info,
                reason,
                now_ns: now,
            };
            match verdict {
                guard::Verdict::Go => crate::systemd::escalate::act(
                    &mut self.actor,
                    self.escalation.as_mut(),
                    &mut self.diag,
                    &ev,
                ),
                guard::Verdict::Hold => Actor::hold(&ev),
                guard::Verdict::Wait => {}
            }
        }
    }

    pub(crate) fn report_unreadable(
        &mut self,
        cookie: u64,
        rec: &SockState,
        e: &crate::diag::DiagError,
    ) {
        if self.unreadable.insert(cookie) {
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
