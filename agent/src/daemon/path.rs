//! The path to the endpoint, as the loop learns of it: down when the guard held a batch or a
//! peer probe found no address accepting; back when a connection was accepted or a socket
//! to an endpoint address heard from its peer. The judge keeps the state and the rule
//! (`lifeline_judge`'s `path.rs`: evidence across a return is earned again); this is where
//! each fact comes in, and where the log says so once per change.

use std::{collections::BTreeSet, net::SocketAddr};

use super::Daemon;
use crate::judge::Mono;

/// The endpoint addresses followed in `PATH_ALIVE`.
#[derive(Default)]
pub(super) struct PathPeers {
    installed: BTreeSet<SocketAddr>,
}

impl Daemon {
    /// Keep `PATH_ALIVE`'s addresses those of the endpoint (current, or leaving within the
    /// grace): only their sockets' linear timeouts wait for the path.
    pub(super) fn sync_path_peers(&mut self) {
        let Some(f) = self.follow.as_ref() else {
            return;
        };
        let want = f.endpoints.peers_within_grace(f.grace);
        for gone in self.path_peers.installed.difference(&want) {
            self.kernel.remove_path_peer(*gone);
        }
        let mut installed = BTreeSet::new();
        for peer in want {
            match self.kernel.add_path_peer(peer) {
                Ok(()) => {
                    installed.insert(peer);
                }
                Err(e) => tracing::warn!(peer = %peer, error = %format!("{e:#}"),
                    "cannot follow the path to an endpoint address: its sockets keep linear timeouts in a blip"),
            }
        }
        self.path_peers.installed = installed;
    }

    /// A peer probe found its peer alive and nothing else changed (`Prober::found`): its
    /// finding is taken now, so `PATH_ALIVE` keeps the socket's linear timeouts on from its
    /// next RTO, without a sweep. A socket whose kill waits for this answer is looked at
    /// again within `PROBE_RECHECK` by its own wake; the probe is asked at the first sign of
    /// trouble, so on a death its answer is in long before the verdict. `false` (sweep now)
    /// while the path is down: then the answer is a return. Measured at a node's usual load
    /// (40 sockets, 5 % loss): one sweep a second in about nine came 2 ms after the sweep
    /// that asked the probe, and visited nothing.
    pub(crate) fn quiet_finding(&mut self) -> bool {
        if self.judge.path_down_since().is_some() {
            return false;
        }
        self.path_findings();
        true
    }

    /// The notice of `quiet_finding`'s findings; `None` without an endpoint.
    #[must_use]
    pub(crate) fn found(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        self.follow.as_ref().map(|f| f.prober.found())
    }

    /// Peer probes that found the path down, or a peer alive, since the last sweep.
    pub(super) fn path_findings(&mut self) {
        self.sync_path_peers();
        let Some(f) = self.follow.as_mut() else {
            return;
        };
        let (down, alive) = (f.prober.take_path_down(), f.prober.take_alive());
        let works = f.prober.take_path_works();
        if let Some(since) = down {
            // A healthy answer from before no longer stands: the next batch checks again.
            f.guard.forget();
            self.path_down(
                since,
                "a peer probe found no address of the endpoint accepting",
            );
        }
        if let Some((peer, at)) = alive {
            self.heard(peer, at);
        }
        for w in works {
            // The address that accepted was heard from; the probed peer was not, but the
            // path to it works, so its sockets' linear timeouts serve this episode (a
            // whole-path blip has no address accepting, and keeps them paused).
            self.heard(w.via, w.at);
            self.kernel.path_alive(w.peer, w.at);
        }
    }

    /// The path was found down at `since`.
    pub(super) fn path_down(&mut self, since: Mono, why: &str) {
        if self.judge.path_down_since().is_none() {
            tracing::warn!(target: "lifeline::endpoint", why,
                "the path to the API endpoint is down: no kill until it is back, and then only on evidence gathered after it");
        }
        self.judge.path_down(since);
    }

    /// `peer`, an endpoint address, was heard from at `at`: a peer probe's finding against it
    /// that began before is dropped, and a path found down before is back.
    pub(super) fn heard(&mut self, peer: SocketAddr, at: Mono) {
        if let Some(f) = self.follow.as_ref() {
            f.prober.heard(peer, at);
        }
        self.kernel.path_alive(peer, at);
        if self
            .judge
            .path_down_since()
            .is_some_and(|d| at > d + crate::judge::SLACK)
        {
            self.path_back(at, peer);
        }
    }

    /// The path was found working at `at`, through `via`. On a return, every pending verdict
    /// is earned again (the judge's rule); says so once.
    pub(super) fn path_back(&mut self, at: Mono, via: SocketAddr) -> bool {
        let down = self.judge.path_down_since();
        let back = self.judge.path_back(at);
        if let (true, Some(f)) = (back, self.follow.as_ref()) {
            f.prober.path_back();
        }
        if let (true, Some(down)) = (back, down) {
            let down_ms = u64::try_from((at - down).as_millis()).unwrap_or(u64::MAX);
            tracing::warn!(target: "lifeline::endpoint", via = %via, down_ms,
                "the path to the API endpoint is back: every pending verdict is earned again from evidence gathered after it (a blip is not a death)");
        }
        back
    }
}
