//! Peer probes, run in the background and remembered for a short while.
//!
//! Requested when a peer leaves the endpoint's answers and when a socket to it shows its
//! first sign of trouble; at most one probe per peer in flight, and a result is reused for
//! a few seconds so a sweep never probes the same peer twice in a row.
//!
//! A peer whose fresh connections all time out is dead only if another address of the
//! endpoint accepts one at that moment: otherwise the path to the endpoint is down (a link
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

use super::connect::{Connect, Reach};
use crate::{
    judge::{DeadPeer, Mono, PeerProbe, ProbeAsk, SLACK},
    kernel::clock::Clock,
};

/// How long a result stands before a new request probes again.
const FRESH_ALIVE: Duration = Duration::from_secs(5);
const FRESH_DEAD: Duration = Duration::from_secs(10);

/// What a peer probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Finding {
    /// A try was accepted.
    Alive,
    /// A try was refused: a live host with nothing listening, alive as far as the path goes.
    Refused,
    /// Every try timed out while another address of the endpoint accepted.
    Dead,
    /// Every try timed out and no other address accepted: the path, not the peer.
    PathDown,
    /// Any other error: proves nothing.
    Failed,
}

impl Finding {
    #[must_use]
    pub(super) const fn label(self) -> &'static str {
        match self {
            Self::Alive => "alive",
            Self::Refused => "refused",
            Self::Dead => "dead",
            Self::PathDown => "path-down",
            Self::Failed => "failed",
        }
    }
}

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
    result: Option<Result>,
}

#[derive(Default)]
struct State {
    by_peer: HashMap<SocketAddr, Entry>,
    /// The earliest start of a probe that found the path down, not yet taken by the loop.
    path_down: Option<Mono>,
    /// The latest answer of a probe that found its peer alive, not yet taken by the loop.
    alive: Option<(SocketAddr, Mono)>,
}

#[derive(Clone)]
pub(crate) struct Prober {
    inner: Arc<Mutex<State>>,
    /// Woken when a probe finishes, so the daemon acts on a dead peer at once.
    wake: Arc<Notify>,
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
            clock,
            connect,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Probe `peer` unless a probe is running or a fresh result exists (one that began
    /// after `ask.after`, when given). `others`: the endpoint's current addresses, tried when
    /// `peer` times out.
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
        drop(inner);
        tokio::spawn(async move {
            let finding = find(this.connect.as_ref(), peer, &others).await;
            let at = this.clock.now();
            tracing::info!(target: "lifeline::endpoint", peer = %peer, result = finding.label(), reason,
                took_ms = u64::try_from((at - started).as_millis()).unwrap_or(u64::MAX), "peer probe");
            let mut inner = this.lock();
            match finding {
                Finding::PathDown => {
                    inner.path_down = Some(inner.path_down.map_or(started, |t| t.min(started)));
                }
                Finding::Alive | Finding::Refused => inner.alive = Some((peer, at)),
                Finding::Dead | Finding::Failed => {}
            }
            let e = inner.by_peer.entry(peer).or_default();
            e.running = None;
            e.result = Some(Result {
                finding,
                started,
                at,
            });
            drop(inner);
            this.wake.notify_one();
        });
    }

    /// The latest probe of `peer`: running, or its fresh finding.
    #[must_use]
    pub(crate) fn finding(&self, peer: SocketAddr) -> Option<PeerProbe> {
        let now = self.clock.now();
        let inner = self.lock();
        let e = inner.by_peer.get(&peer)?;
        if let Some(started) = e.running {
            return Some(PeerProbe::Running { started });
        }
        let r = e.result.filter(|r| r.fresh(now))?;
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

/// The probe of `peer`; when every try timed out, whether any of `others` accepts.
async fn find(connect: &dyn Connect, peer: SocketAddr, others: &[SocketAddr]) -> Finding {
    match connect.probe(peer).await {
        Reach::Accepted => Finding::Alive,
        Reach::Refused => Finding::Refused,
        Reach::Failed => Finding::Failed,
        Reach::TimedOut => {
            let others: Vec<SocketAddr> = others.iter().copied().filter(|a| *a != peer).collect();
            if connect.any_accepts(others).await.is_some() {
                Finding::Dead
            } else {
                Finding::PathDown
            }
        }
    }
}
