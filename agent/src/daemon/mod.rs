//! The agent's loop: read the probe's records and the kernel's state, ask the judge, carry
//! out its decisions, publish status. All the I/O is here; all the rules are in `judge`.

use std::{
    collections::HashSet,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Result;
use tokio::sync::watch;

use crate::{
    act,
    endpoint::{Follow, Members},
    judge::{Cookie, Judge, Read, Record, Socket},
    kernel::{clock::Clock, mirror::Mirror},
    report::status::Snapshot,
};

pub(crate) mod defer;
mod defer_apply;
mod defer_log;
mod execute;
#[cfg(test)]
mod fake;
#[cfg(test)]
mod fake_kernel;
#[cfg(test)]
mod fake_net;
#[cfg(test)]
mod fake_world;
mod fast;
#[cfg(test)]
mod fast_tests;
pub(crate) mod kernel;
mod live;
mod lossy;
mod pacing;
mod path;
mod publish;
mod restore;
#[cfg(test)]
mod sweep_blip_tests;
#[cfg(test)]
mod sweep_news_tests;
#[cfg(test)]
mod sweep_tests;
mod table;
mod tracked;
mod visit;

pub(crate) use live::Live;

pub(crate) struct Daemon {
    /// The probe, `sock_diag` and the watch stage's bookkeeping (`kernel.rs`).
    kernel: Box<dyn kernel::Kernel>,
    /// The loop's own memory of each socket (polled, reported unreadable, its fast phase,
    /// its deferral): `tracked.rs`.
    tracked: tracked::Table,
    judge: Judge,
    /// The one clock of the sweeps (and of the peer probes' findings).
    clock: Arc<dyn Clock>,
    status: watch::Sender<Snapshot>,
    sockets_full: u64,
    /// Restart requests to the restarter task, and the unit's cgroup; None without
    /// --restart-unit.
    restarts: Option<crate::act::restart::restarter::Restarts>,
    /// Following the API endpoint; `None` when no endpoint is configured.
    follow: Option<Follow>,
    /// The probe's records, kept current by its news.
    mirror: Mirror,
    /// Which sockets are the endpoint's connections (the fact recorded per socket).
    members: Members,
    /// Where every decision logged here is counted (the metrics).
    counts: act::Counts,
    /// The probe's counters as read at the last sweep, published in the summary.
    probe_stats: [u64; lifeline_common::config::stats::LEN as usize],
    /// News the inbox dropped, as of the last sweep.
    inbox_dropped: u64,
    /// The pacing of the iterator passes that poke sockets in a fast keepalive phase.
    fast: pacing::FastPhases,
    /// Peers whose fast phases ended answered lately: no phase opened at their overdue look.
    lossy: lossy::Lossy,
    /// Keepalive deferred to the application's own deadline while lifeline only observes.
    defer: defer::Deferrals,
    /// The endpoint addresses whose path the probe's `PATH_ALIVE` follows.
    path_peers: path::PathPeers,
}

impl Daemon {
    /// The summary published after the last sweep.
    #[must_use]
    pub(crate) fn published(&self) -> watch::Ref<'_, Snapshot> {
        self.status.borrow()
    }

    #[must_use]
    pub(crate) fn new(parts: Parts) -> Self {
        Self {
            kernel: parts.kernel,
            tracked: tracked::Table::with_polled(&parts.polled),
            judge: parts.judge,
            clock: parts.clock,
            status: parts.status,
            sockets_full: 0,
            restarts: parts.restarts,
            follow: parts.follow,
            mirror: Mirror::default(),
            members: Members::default(),
            counts: parts.counts,
            probe_stats: Default::default(),
            inbox_dropped: 0,
            fast: pacing::FastPhases::default(),
            lossy: lossy::Lossy::default(),
            defer: parts.defer,
            path_peers: path::PathPeers::default(),
        }
    }

    /// One sweep: bring the mirror up to date from the probe's news, visit the sockets that
    /// have news or are due something (`visit.rs`), judge them, act, publish the counts.
    /// Returns how soon the next sweep is due (a dead socket awaiting its confirming look, a
    /// scheduled look, a jittered kill, a held batch's re-check), at most `interval`.
    ///
    /// # Errors
    /// When the probe's maps cannot be read.
    pub(crate) async fn sweep(&mut self, interval: Duration) -> Result<Duration> {
        let armed = *self.judge.keepalive() != lifeline_common::Keepalive::default();
        let adopted = self.kernel.watch(self.follow.as_ref(), armed);
        self.tracked.poll(adopted.polled.iter().copied());
        let news = self.kernel.news();
        let now = self.clock.now();
        let lost = self.check_capacity()?;
        let visit = self.visits(&news, &adopted.all, lost, now)?;
        // After the news: a socket recorded in this sweep has its peer's device ready
        // before its first keepalive probe.
        let devices = self.mirror.peers().map(|(p, _)| p.ip()).collect();
        self.kernel.fast_devices(devices);
        if let Some(f) = self.follow.as_ref() {
            self.members.sync(
                &mut self.tracked,
                &f.endpoints,
                f.grace,
                self.mirror.peers(),
                Instant::now(),
            );
        }
        self.path_findings();
        let mut kills = Vec::new();
        let mut wake = interval;
        for cookie in visit {
            let Some(rec) = self.mirror.get(cookie).copied() else {
                continue;
            };
            let (member, peer) = self.endpoint_fact(cookie, &rec);
            let s = Socket {
                cookie,
                rec: &rec,
                polled: self.tracked.is_polled(cookie),
                member: member.as_ref(),
                followed: self.follow.is_some(),
                peer,
            };
            let read = self
                .judge
                .wants_info(&s, now)
                .then(|| self.read(cookie, &rec));
            if let (Some(Read::Info(i)), true) = (&read, member.is_some()) {
                self.heard(rec.peer, crate::judge::life(i, now));
            }
            let Some(look) = self.judge.look(&s, read.as_ref(), now) else {
                self.kernel.forget(cookie);
                self.gone(cookie);
                continue;
            };
            self.defer_look(cookie, &rec, read.as_ref());
            if let (Some(ask), Some(f)) = (look.probe, self.follow.as_ref()) {
                f.prober.request(rec.peer, ask, f.endpoints.targets());
            }
            if look.resolve {
                self.resolve_early(cookie, Instant::now());
            }
            if look.hasten {
                self.hasten(cookie, now);
            }
            if let Some((endpoint, absent_for)) = &look.report_orphan {
                act::log_orphan_report(&self.counts, &rec, endpoint, *absent_for);
            }
            if let Some(w) = look.wake {
                wake = wake.min(w);
            }
            kills.extend(look.kill);
        }
        self.execute(&kills).await;
        self.defer_sweep();
        let end = self.judge.end_sweep(self.clock.now());
        if let Some(w) = end.wake {
            wake = wake.min(w);
        }
        if let Some(t) = self.follow.as_ref().and_then(|f| f.guard.next_check()) {
            wake = wake.min((t - self.clock.now()).max(Duration::from_millis(50)));
        }
        self.after_sweep(end);
        self.publish();
        Ok(wake)
    }

    /// Everything kept about a socket that is gone.
    fn gone(&mut self, cookie: Cookie) {
        self.mirror.remove(cookie);
        self.judge.forget(cookie);
        self.tracked.forget(cookie);
    }

    /// The kernel's `tcp_info` for one socket.
    fn read(&mut self, cookie: Cookie, rec: &Record) -> Read {
        match self.kernel.get(rec.local, rec.peer, cookie) {
            Ok(None) => Read::Gone,
            Ok(Some(d)) => d.info.map_or(Read::NoInfo, Read::Info),
            Err(e) => {
                self.report_unreadable(cookie, rec, &e);
                Read::Unreadable
            }
        }
    }
}

/// What a daemon is made of, from `run`.
pub(crate) struct Parts {
    pub kernel: Box<dyn kernel::Kernel>,
    pub polled: HashSet<Cookie>,
    pub judge: Judge,
    pub clock: Arc<dyn Clock>,
    pub status: watch::Sender<Snapshot>,
    pub restarts: Option<crate::act::restart::restarter::Restarts>,
    pub follow: Option<Follow>,
    pub counts: act::Counts,
    pub defer: defer::Deferrals,
}
