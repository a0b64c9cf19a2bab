//! The agent's loop: sweep the probe's records, decide, act, publish status.

use std::{collections::HashSet, time::Duration};

use anyhow::Result;
use lifeline_common::{config::stats, sock::SOURCE_ADOPTED, SockState};
use tokio::sync::watch;

use crate::{
    action::{Actor, Evidence},
    clock,
    detect::{self, Verdict},
    diag::{SockDiag, TcpInfo},
    idle::{self, IdleWatch},
    probe::Probe,
    status::{Snapshot, SocketStatus},
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
}

impl Daemon {
    /// One sweep. Returns `true` when a dead socket awaits its confirming second
    /// look, so the caller can come back sooner than the regular interval.
    ///
    /// # Errors
    /// When the probe's maps cannot be read.
    pub fn sweep(&mut self) -> Result<bool> {
        let now = clock::now_ns();
        self.check_capacity()?;
        let records = self.probe.sockets()?;
        let mut dead_now = HashSet::new();
        let mut out = Vec::with_capacity(records.len());
        for (cookie, rec) in &records {
            let Some((verdict, info)) = self.judge(*cookie, rec, now) else { continue };
            if verdict.is_dead() {
                dead_now.insert(*cookie);
                if let (true, Some(info)) = (self.seen_dead.contains(cookie), info.as_ref()) {
                    self.actor.act(&mut self.diag, &Evidence { cookie: *cookie, rec, info, verdict, now_ns: now });
                }
            }
            let keepalive = idle::describe(rec, &self.idle.want, self.probe.can_adopt);
            out.push(status_of(*cookie, rec, info.as_ref(), verdict, keepalive, now));
        }
        let pending = dead_now.iter().any(|c| !self.seen_dead.contains(c));
        self.seen_dead = dead_now;
        let live: HashSet<u64> = records.iter().map(|(c, _)| *c).collect();
        self.actor.retain(|c| live.contains(&c));
        self.idle.retain(|c| live.contains(&c));
        self.unreadable.retain(|c| live.contains(c));
        self.status.send_replace(Snapshot {
            stall_timeout_ms: u64::try_from(self.stall.as_millis()).unwrap_or(u64::MAX),
            silent_timeout_ms: self.idle.silent.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            kills: self.actor.kills,
            sockets_full: self.sockets_full,
            sockets: out,
        });
        Ok(pending)
    }

    /// One socket's verdict, and the kernel's `tcp_info` when it was read. `None`: the
    /// socket is gone.
    ///
    /// The record nominates (stalled), or the socket is idle long enough to be due a
    /// keepalive look, or it is a polled socket; then only the kernel's current view can
    /// confirm, and without it nothing is ever dead.
    fn judge(&mut self, cookie: u64, rec: &SockState, now: u64) -> Option<(Verdict, Option<TcpInfo>)> {
        let polled = self.polled.contains(&cookie);
        let from_record = detect::from_record(rec, now, self.stall);
        let idle_due = !polled && matches!(from_record, Verdict::Idle | Verdict::Healthy) && self.idle.due(cookie, rec, now);
        if !(polled || idle_due || from_record == Verdict::Stalled) {
            return Some((from_record, None));
        }
        let info = match self.diag.get(rec.local(), rec.peer(), cookie) {
            Ok(None) => {
                // Closed between the map read and now (or in another netns).
                self.probe.forget(cookie);
                self.polled.remove(&cookie);
                return None;
            }
            Ok(Some(d)) => d.info,
            Err(e) => {
                self.report_unreadable(cookie, rec, &e);
                None
            }
        };
        let Some(i) = info else { return Some((Verdict::Suspect, None)) };
        if polled || idle_due {
            self.idle.looked(cookie, &i, now);
        }
        let kernel = detect::from_info(&i, self.stall, self.idle.silent);
        let verdict = match kernel {
            _ if polled => kernel,
            Verdict::Stalled if from_record == Verdict::Stalled => Verdict::Stalled,
            Verdict::Silent | Verdict::Suspect if idle_due => kernel,
            _ if idle_due => from_record,
            _ => Verdict::Suspect,
        };
        Some((verdict, info))
    }

    fn report_unreadable(&mut self, cookie: u64, rec: &SockState, e: &crate::diag::DiagError) {
        if self.unreadable.insert(cookie) {
            tracing::warn!(target: "lifeline::decision", peer = %rec.peer(), local = %rec.local(), action = "none",
                outcome = "unreadable", error = %e, "cannot read the kernel's state of a suspect socket; not acting on it");
        }
    }

    /// A full map means sockets go unwatched: say so loudly, every time it grows.
    fn check_capacity(&mut self) -> Result<()> {
        let full = self.probe.stats()?[stats::SOCKETS_FULL as usize];
        if full > self.sockets_full {
            tracing::error!(not_watched = full, new = full - self.sockets_full,
                "SOCKETS map is full: new sockets are NOT watched; raise --max-sockets");
            self.sockets_full = full;
        }
        Ok(())
    }
}

fn status_of(cookie: u64, r: &SockState, info: Option<&TcpInfo>, verdict: Verdict, keepalive: String, now: u64) -> SocketStatus {
    SocketStatus {
        cookie,
        local: r.local().to_string(),
        peer: r.peer().to_string(),
        owner_pid: (r.owner_pid != 0).then_some(r.owner_pid),
        owner_comm: r.comm().map(str::to_owned),
        established_age_ms: clock::age_ms(now, r.established_ns),
        last_ack_age_ms: info.map_or_else(|| clock::age_ms(now, r.last_ack_ns), |i| u64::from(i.last_ack_recv_ms)),
        trouble_age_ms: (r.trouble_ns != 0).then(|| clock::age_ms(now, r.trouble_ns)),
        unacked_segs: info.map_or(r.packets_out, |i| i.unacked),
        unacked_bytes: r.unacked_bytes(),
        retransmits: r.retrans_count,
        rto_count: r.rto_count,
        bytes_acked: r.bytes_acked,
        bytes_received: r.bytes_received,
        verdict: serde_json::to_value(verdict).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
        keepalive,
        keepalive_probes: info.map(|i| i.probes),
        source: if r.source == SOURCE_ADOPTED { "adopted" } else { "sock_ops" }.to_owned(),
    }
}
