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
    /// Stalled sockets seen in the previous sweep: a kill needs two looks in a row.
    pub seen_stalled: HashSet<u64>,
    pub sockets_full: u64,
    /// Sockets whose state could not be read, already reported (reported once each).
    pub unreadable: HashSet<u64>,
    /// Restart escalation (issue 5); None without --restart-unit.
    pub escalation: Option<crate::systemd::escalate::Escalation>,
}

impl Daemon {
    /// One sweep. Returns `true` when a stalled socket awaits its confirming second
    /// look, so the caller can come back sooner than the regular interval.
    ///
    /// # Errors
    /// When the probe's maps cannot be read.
    pub fn sweep(&mut self) -> Result<bool> {
        let now = clock::now_ns();
        self.check_capacity()?;
        let records = self.probe.sockets()?;
        let mut stalled_now = HashSet::new();
        let mut out = Vec::with_capacity(records.len());
        for (cookie, rec) in &records {
            let polled = self.polled.contains(cookie);
            let mut verdict = detect::from_record(rec, now, self.stall);
            let mut info = None;
            if polled || verdict == Verdict::Stalled {
                match self.diag.get(rec.local(), rec.peer(), *cookie) {
                    Ok(None) => {
                        // Closed between the map read and now (or in another netns).
                        self.probe.forget(*cookie);
                        self.polled.remove(cookie);
                        continue;
                    }
                    Ok(Some(d)) => info = d.info,
                    Err(e) => self.report_unreadable(*cookie, rec, &e),
                }
                // Only the kernel's current view can confirm; without it, never act.
                verdict = match (info.map(|i| detect::from_info(&i, self.stall)), polled) {
                    (Some(v), true) => v,
                    (Some(Verdict::Stalled), false) => Verdict::Stalled,
                    _ => Verdict::Suspect,
                };
            }
            if verdict == Verdict::Stalled {
                stalled_now.insert(*cookie);
                if let (true, Some(info)) = (self.seen_stalled.contains(cookie), info.as_ref()) {
                    let ev = Evidence { cookie: *cookie, rec, info, now_ns: now };
                    crate::systemd::escalate::act(&mut self.actor, self.escalation.as_mut(), &mut self.diag, &ev);
                }
            }
            out.push(status_of(*cookie, rec, info.as_ref(), verdict, now));
        }
        let pending = stalled_now.iter().any(|c| !self.seen_stalled.contains(c));
        self.seen_stalled = stalled_now;
        let live: HashSet<u64> = records.iter().map(|(c, _)| *c).collect();
        self.actor.retain(|c| live.contains(&c));
        self.unreadable.retain(|c| live.contains(c));
        if let Some(esc) = self.escalation.as_mut() {
            esc.after_sweep(&out);
            esc.retain(|c| live.contains(&c));
        }
        self.status.send_replace(Snapshot {
            stall_timeout_ms: u64::try_from(self.stall.as_millis()).unwrap_or(u64::MAX),
            kills: self.actor.kills,
            sockets_full: self.sockets_full,
            sockets: out,
        });
        Ok(pending)
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

fn status_of(cookie: u64, r: &SockState, info: Option<&TcpInfo>, verdict: Verdict, now: u64) -> SocketStatus {
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
        source: if r.source == SOURCE_ADOPTED { "adopted" } else { "sock_ops" }.to_owned(),
    }
}
