//! Peer probes, run in the background and remembered for a short while.
//!
//! Requested when a peer leaves the endpoint's answers and when a socket to it shows its
//! first sign of trouble; at most one probe per peer in flight, and a result is reused for
//! a few seconds so a sweep never probes the same peer twice in a row.
//!
//! A peer whose fresh connections all time out is dead only if another address of the
//! endpoint accepts one while they are out (tried at the same time, so a socket waiting to
//! know whether the path works knows within a round trip: `PathWorks`): otherwise the path to the endpoint is down (a link
//! flap, a failover, a paused VM), which says nothing about the peer and is never a reason
//! to kill (`Finding::PathDown`, handed to the judge as the path's state). A finding stands
//! only until the peer is heard from again: a socket to it that received anything after
//! the probe began, or a healthy-endpoint check it accepted, drops it at once.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::sync::Notify;

use super::{
    connect::Connect,
    find::{Finding, find},
};
use crate::{
    judge::{DeadPeer, Mono, PeerProbe, ProbeAsk, SLACK},
    kernel::clock::Clock,
};

/// How long a result stands before a new request probes again.
const FRESH_ALIVE: Duration = Duration::from_secs(5);
const FRESH_DEAD: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug)]
struct Result {
    finding: Finding,
    started: Mono,
    at: Mono,
}

impl Result {
    fn fresh(&self, now: Mono) -> bool {
        let keep = match self.finding {
            Finding::Dead | Finding::PathDown => FRESH_DEAD,
            Finding::Alive | Finding::Refused | Finding::Failed => FRESH_ALIVE,
        };
        now - self.at < keep
    }
}

#[derive(Default)]
struct Entry {
    /// A probe in flight, since.
    running: Option<Mono>,
    /// While it runs: when another address of the endpoint accepted (the path works).
    path_works: Option<Mono>,
    result: Option<Result>,
}

#[derive(Default)]
struct State {
    by_peer: HashMap<SocketAddr, Entry>,
    /// The earliest start of a probe that found the path down, not yet taken by the loop.
    path_down: Option<Mono>,
    /// The latest answer of a probe that found its peer alive, not yet taken by the loop.
    alive: Option<(SocketAddr, Mono)>,
    /// Probes whose peer had not answered when another address accepted: (peer, the
    /// address that accepted, when), not yet taken by the loop.
    path_works: Vec<PathWorks>,
}

/// Another address of the endpoint (`via`) accepted at `at` while `peer`'s probe ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PathWorks {
    pub peer: SocketAddr,
    pub via: SocketAddr,
    pub at: Mono,
}

#[derive(Clone)]
pub(crate) struct Prober {
    inner: Arc<Mutex<State>>,
    /// Woken when a probe finishes with news the judge must act on at once (a dead peer,
    /// the path down, a failed probe).
    wake: Arc<Notify>,
    /// Woken when a probe found its peer alive with the path not down: the loop only takes
    /// the finding (`PATH_ALIVE`, before the socket's next RTO), without a sweep.
    found: Arc<Notify>,
    /// The moments a probe starts and ends at, on the loop's clock.
    clock: Arc<dyn Clock>,
    /// How the tries are made.
    connect: Arc<dyn Connect>,
}

impl Prober {
    #[must_use]
    pub(crate) fn new(wake: Arc<Notify>, clock: Arc<dyn Clock>, connect: Arc<dyn Connect>) -> Self {
        Self {
            inner: Arc::default(),
            wake,
            found: Arc::default(),
            clock,
            connect,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Probe `peer` unless a probe is running or a fresh result exists (one that began
    /// after `ask.after`, when given). `others`: the endpoint's current addresses, tried at
    /// the same time (`find`).
    pub(crate) fn request(&self, peer: SocketAddr, ask: ProbeAsk, others: Vec<SocketAddr>) {
        let now = self.clock.now();
        let mut inner = self.lock();
        let e = inner.by_peer.entry(peer).or_default();
        let answered = e
            .result
            .is_some_and(|r| r.fresh(now) && ask.after.is_none_or(|t| r.started + SLACK >= t));
        if e.running.is_some() || answered {
            return;
        }
        let (this, started, reason) = (self.clone(), now, ask.why);
        e.running = Some(started);
        e.path_works = None;
        drop(inner);
        tokio::spawn(async move {
            let works = |via| this.path_works(peer, via);
            let finding = find(this.connect.as_ref(), peer, others, works).await;
            let at = this.clock.now();
            tracing::info!(target: "lifeline::endpoint", peer = %peer, result = finding.label(), reason,
                took_ms = u64::try_from((at - started).as_millis()).unwrap_or(u64::MAX), "peer probe");
            let mut inner = this.lock();
            // The usual finding (a live peer on a lossy path, about one a second at 5 %
            // loss per 20 busy sockets) changes no verdict by itself: a socket whose kill
            // waits for it is looked at again within `PROBE_RECHECK` anyway.
            let quiet =
                matches!(finding, Finding::Alive | Finding::Refused) && inner.path_down.is_none();
            match finding {
                Finding::PathDown => {
                    inner.path_down = Some(inner.path_down.map_or(started, |t| t.min(started)));
                }
                Finding::Alive | Finding::Refused => inner.alive = Some((peer, at)),
                Finding::Dead | Finding::Failed => {}
            }
            let e = inner.by_peer.entry(peer).or_default();
            e.running = None;
            e.path_works = None;
            e.result = Some(Result {
                finding,
                started,
                at,
            });
            drop(inner);
            if quiet {
                this.found.notify_one();
            } else {
                this.wake.notify_one();
            }
        });
    }

    /// Woken when a probe found its peer alive and nothing else (see `found`).
    #[must_use]
    pub(crate) fn found(&self) -> Arc<Notify> {
        Arc::clone(&self.found)
    }

    /// The latest probe of `peer`: running, or its fresh finding.
    #[must_use]
    pub(crate) fn finding(&self, peer: SocketAddr) -> Option<PeerProbe> {
        let now = self.clock.now();
        let inner = self.lock();
        let e = inner.by_peer.get(&peer)?;
        let fresh = e.result.filter(|r| r.fresh(now));
        if let Some(started) = e.running {
            // A finding that still stands speaks while the next probe runs (one asked for a
            // later trouble episode): hiding it would hold a socket whose verdict is in, and
            // a dead peer's kill, for the second probe's 1.5 s. A dead finding first (it is
            // dropped the moment the peer is heard from, and says the path works too); then
            // the running probe's news that the path works; then an alive finding, which
            // `PeerProbe::since` keeps from a socket heard from after it began.
            let standing = fresh.map(|r| r.finding);
            if e.path_works.is_some() && standing != Some(Finding::Dead) {
                return Some(PeerProbe::PathWorks { started });
            }
            if !matches!(
                standing,
                Some(Finding::Alive | Finding::Refused | Finding::Dead)
            ) {
                return Some(PeerProbe::Running { started });
            }
        }
        let r = fresh?;
        let started = r.started;
        Some(match r.finding {
            Finding::Alive | Finding::Refused => PeerProbe::Alive { started },
            Finding::Dead => PeerProbe::Dead(DeadPeer {
                probe_started: started,
                found: r.at,
            }),
            Finding::PathDown => PeerProbe::PathDown { started },
            // Proves nothing: as if none had run.
            Finding::Failed => return None,
        })
    }

    /// The latest fresh finding that `peer` is dead, with when its probe began.
    #[must_use]
    pub(crate) fn dead(&self, peer: SocketAddr) -> Option<DeadPeer> {
        let now = self.clock.now();
        let inner = self.lock();
        let r = inner.by_peer.get(&peer)?.result?;
        (r.finding == Finding::Dead && r.fresh(now)).then_some(DeadPeer {
            probe_started: r.started,
            found: r.at,
        })
    }

    /// `peer` was heard from at `at` (a socket received from it, or it accepted a
    /// connection): a dead or path-down finding of a probe that began before is dropped.
    pub(crate) fn heard(&self, peer: SocketAddr, at: Mono) {
        let mut inner = self.lock();
        if let Some(e) = inner.by_peer.get_mut(&peer)
            && e.result.is_some_and(|r| {
                matches!(r.finding, Finding::Dead | Finding::PathDown) && r.started < at
            })
        {
            e.result = None;
        }
    }

    /// The path is back: every path-down finding is stale (a peer still dead is probed again,
    /// and with the path working that probe tells a dead peer from a live one).
    pub(crate) fn path_back(&self) {
        let mut inner = self.lock();
        inner.path_down = None;
        for e in inner.by_peer.values_mut() {
            if e.result.is_some_and(|r| r.finding == Finding::PathDown) {
                e.result = None;
            }
        }
    }

    /// `via` accepted while `peer`'s probe ran: noted for the judge (`finding`) and the loop
    /// (`take_path_works`), which is woken.
    fn path_works(&self, peer: SocketAddr, via: SocketAddr) {
        let at = self.clock.now();
        let mut inner = self.lock();
        if let Some(e) = inner.by_peer.get_mut(&peer).filter(|e| e.running.is_some()) {
            e.path_works = Some(at);
        }
        inner.path_works.push(PathWorks { peer, via, at });
        drop(inner);
        self.wake.notify_one();
    }

    /// Addresses that accepted while another's probe ran, since the last call.
    pub(crate) fn take_path_works(&self) -> Vec<PathWorks> {
        std::mem::take(&mut self.lock().path_works)
    }

    /// The latest peer a probe found alive since the last call, and when.
    pub(crate) fn take_alive(&self) -> Option<(SocketAddr, Mono)> {
        self.lock().alive.take()
    }

    /// The start of the earliest probe that found the path down since the last call.
    pub(crate) fn take_path_down(&self) -> Option<Mono> {
        self.lock().path_down.take()
    }

    /// Forget peers nobody asked about for a while.
    pub(crate) fn prune(&self) {
        let now = self.clock.now();
        self.lock().by_peer.retain(|_, e| {
            e.running.is_some()
                || e.result
                    .is_some_and(|r| now - r.at < Duration::from_mins(1))
        });
    }
}
