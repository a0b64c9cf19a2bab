//! The agent's loop: read the probe's records and the kernel's state, ask the judge, carry
//! out its decisions, publish status. All the I/O is here; all the rules are in `judge`.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use anyhow::Result;
use lifeline_common::SockState;
use tokio::sync::watch;

use crate::{
    act,
    endpoint::{Follow, Members},
    judge::{Judge, Read, Socket},
    kernel::{clock, diag::SockDiag, mirror::Mirror, probe::Probe},
    report::status::Snapshot,
};

pub mod defer;
mod defer_apply;
mod defer_log;
mod execute;
mod fast;
mod path;
mod publish;
mod restore;
mod table;
mod visit;

pub struct Daemon {
    probe: Probe,
    diag: SockDiag,
    /// Pre-existing sockets the probe could not arm: judged from `tcp_info` alone.
    polled: HashSet<u64>,
    judge: Judge,
    status: watch::Sender<Snapshot>,
    sockets_full: u64,
    /// Sockets whose state could not be read, already reported (reported once each).
    unreadable: HashSet<u64>,
    /// Restart requests to the restarter task, and the unit's cgroup; None without
    /// --restart-unit.
    restarts: Option<crate::act::restart::restarter::Restarts>,
    /// Following the API endpoint; `None` when no endpoint is configured.
    follow: Option<Follow>,
    /// Target cgroups and endpoint peers, kept current every sweep.
    watching: crate::watch::Watching,
    /// The probe's news, collected by the ring-buffer reader.
    news: crate::kernel::readers::Inbox,
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
    /// Sockets in a fast keepalive phase, and the iterator passes that poke them.
    fast: fast::FastPhases,
    /// Keepalive deferred to the application's own deadline while lifeline only observes.
    defer: defer::Deferrals,
    /// The endpoint addresses whose path the probe's `PATH_ALIVE` follows.
    path_peers: path::PathPeers,
}

impl Daemon {
    /// The summary published after the last sweep.
    #[must_use]
    pub fn published(&self) -> watch::Ref<'_, Snapshot> {
        self.status.borrow()
    }

    #[must_use]
    pub fn new(parts: Parts) -> Self {
        Self {
            probe: parts.probe,
            diag: parts.diag,
            polled: parts.polled,
            judge: parts.judge,
            status: parts.status,
            sockets_full: 0,
            unreadable: HashSet::new(),
            restarts: parts.restarts,
            follow: parts.follow,
            watching: parts.watching,
            news: parts.news,
            mirror: Mirror::default(),
            members: Members::default(),
            counts: parts.counts,
            probe_stats: Default::default(),
            inbox_dropped: 0,
            fast: fast::FastPhases::default(),
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
    pub async fn sweep(&mut self, interval: Duration) -> Result<Duration> {
        let armed = *self.judge.keepalive() != lifeline_common::Keepalive::default();
        let adopted =
            self.watching
                .sync(&mut self.probe, &mut self.diag, self.follow.as_ref(), armed);
        self.polled.extend(adopted.polled.iter().copied());
        let news = self.news.take();
        let now = clock::now_ns();
        let at = Instant::now();
        let lost = self.check_capacity()?;
        let visit = self.visits(&news, &adopted.all, lost, now, at)?;
        // After the news: a socket recorded in this sweep has its peer's device ready
        // before its first keepalive probe.
        self.probe
            .fast_devices(self.mirror.peers().map(|(p, _)| p.ip()));
        if let Some(f) = self.follow.as_ref() {
            self.members
                .sync(&f.endpoints, f.grace, self.mirror.peers(), at);
        }
        self.path_findings();
        let mut kills = Vec::new();
        let mut wake = interval;
        for cookie in visit {
            let Some(rec) = self.mirror.get(cookie).copied() else {
                continue;
            };
            let (member, peer) = self.endpoint_fact(cookie, &rec, at);
            let s = Socket {
                cookie,
                rec: &rec,
                polled: self.polled.contains(&cookie),
                member: member.as_ref(),
                followed: self.follow.is_some(),
                peer,
            };
            let read = self
                .judge
                .wants_info(&s, now, at)
                .then(|| self.read(cookie, &rec));
            if let (Some(Read::Info(i)), true) = (&read, member.is_some()) {
                self.heard(rec.peer(), crate::judge::life(i, at));
            }
            let Some(look) = self.judge.look(&s, read.as_ref(), now, at) else {
                self.probe.forget(cookie);
                self.gone(cookie);
                continue;
            };
            self.defer_look(cookie, &rec, read.as_ref());
            if let (Some(ask), Some(f)) = (look.probe, self.follow.as_ref()) {
                f.prober.request(rec.peer(), ask, f.endpoints.targets());
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
        let end = self.judge.end_sweep(clock::now_ns(), Instant::now());
        if let Some(w) = end.wake {
            wake = wake.min(w);
        }
        if let Some(t) = self.follow.as_ref().and_then(|f| f.guard.next_check()) {
            wake = wake.min(
                t.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(50)),
            );
        }
        self.after_sweep(end);
        self.publish();
        Ok(wake)
    }

    /// Everything kept about a socket that is gone.
    fn gone(&mut self, cookie: u64) {
        self.mirror.remove(cookie);
        self.members.forget(cookie);
        self.judge.forget(cookie);
        self.polled.remove(&cookie);
        self.unreadable.remove(&cookie);
        self.fast.forget(cookie);
        self.defer.forget(cookie);
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
}

/// What a daemon is made of, from `run`.
pub struct Parts {
    pub probe: Probe,
    pub diag: SockDiag,
    pub polled: HashSet<u64>,
    pub judge: Judge,
    pub status: watch::Sender<Snapshot>,
    pub restarts: Option<crate::act::restart::restarter::Restarts>,
    pub follow: Option<Follow>,
    pub watching: crate::watch::Watching,
    pub news: crate::kernel::readers::Inbox,
    pub counts: act::Counts,
    pub defer: defer::Deferrals,
}
