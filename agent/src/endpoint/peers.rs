//! Peer probes, run in the background and remembered for a short while.
//!
//! Requested when a peer leaves the endpoint's answers and when a socket to it shows its
//! first sign of trouble; at most one probe per peer in flight, and a result is reused for
//! a few seconds so a sweep never probes the same peer twice in a row.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use super::connect::{self, Reach};

/// How long a result stands before a new request probes again.
const FRESH_ALIVE: Duration = Duration::from_secs(5);
const FRESH_DEAD: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Entry {
    running: bool,
    result: Option<(Reach, Instant)>,
}

#[derive(Clone)]
pub struct Prober {
    peers: Arc<Mutex<HashMap<SocketAddr, Entry>>>,
    /// Woken when a probe finishes, so the daemon acts on a dead peer at once.
    wake: Arc<Notify>,
}

impl Prober {
    #[must_use]
    pub fn new(wake: Arc<Notify>) -> Self {
        Self {
            peers: Arc::default(),
            wake,
        }
    }

    /// Probe `peer` unless a probe is running or a fresh result exists.
    pub fn request(&self, peer: SocketAddr, reason: &'static str) {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        let e = peers.entry(peer).or_default();
        let fresh = e.result.is_some_and(|(r, at)| {
            at.elapsed()
                < if r == Reach::TimedOut {
                    FRESH_DEAD
                } else {
                    FRESH_ALIVE
                }
        });
        if e.running || fresh {
            return;
        }
        e.running = true;
        drop(peers);
        let (this, started) = (self.clone(), Instant::now());
        tokio::spawn(async move {
            let r = connect::probe(peer).await;
            tracing::info!(target: "lifeline::endpoint", peer = %peer, result = r.label(), reason,
                took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX), "peer probe");
            let mut peers = this.peers.lock().unwrap_or_else(PoisonError::into_inner);
            peers.insert(
                peer,
                Entry {
                    running: false,
                    result: Some((r, Instant::now())),
                },
            );
            drop(peers);
            this.wake.notify_one();
        });
    }

    /// When the latest (fresh) probe found `peer` dead.
    #[must_use]
    pub fn dead_since(&self, peer: SocketAddr) -> Option<Instant> {
        let peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        match peers.get(&peer)?.result {
            Some((Reach::TimedOut, at)) if at.elapsed() < FRESH_DEAD => Some(at),
            _ => None,
        }
    }

    /// Forget peers nobody asked about for a while.
    pub fn prune(&self) {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|_, e| {
            e.running
                || e.result
                    .is_some_and(|(_, at)| at.elapsed() < Duration::from_mins(1))
        });
    }
}
