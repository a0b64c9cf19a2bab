//! Which watched sockets are the endpoint's: a fact recorded per socket, never worked out
//! from a port.
//!
//! A socket is an endpoint's connection only if its peer's address was in that endpoint's
//! set (`EndpointSet::admits`: the latest answer, or one it left less than `--orphan-grace`
//! ago) when the agent first saw it (its ESTABLISHED news, within a sweep of the handshake;
//! its adoption, for a socket older than the agent), or at any moment since, while it lived
//! (its address joins an answer). Only such sockets are judged by DNS: orphaned, migrated,
//! peer-probed, killed for a dead peer, counted as a healthy connection to the endpoint. Any
//! other watched socket on the endpoint's port (kubelet's cgroup talking to another service
//! on 443, a name pinned in /etc/hosts that lifeline's answers never held) gets the evidence
//! verdicts only (stalled, silent). A peer no answer ever held is logged once (per hour).
//! The fact is kept with everything else the loop keeps about the socket (`Facts`, the
//! loop's table of sockets), and forgotten with the socket.

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    net::SocketAddr,
    time::{Duration, Instant},
};

use super::{Endpoints, Membership};
use crate::judge::Cookie;

/// A never-held peer is logged again after this, if sockets to it are still seen.
const REPORT_AGAIN: Duration = Duration::from_hours(1);
/// At most this many reported peers are remembered.
const REPORTED_MAX: usize = 4096;

/// Where the facts are kept: one per socket, in the loop's table of sockets
/// (`daemon/tracked.rs`), so that forgetting a socket forgets its fact too.
pub(crate) trait Facts {
    /// The endpoint (index) `cookie` is the connection of, as recorded.
    fn endpoint_of(&self, cookie: Cookie) -> Option<usize>;
    /// `cookie` is the connection of endpoint `i` from now on; whether it was not recorded.
    fn record(&mut self, cookie: Cookie, i: usize) -> bool;
}

#[derive(Default)]
pub(crate) struct Members {
    /// Every current answer's address at the last `sync`: an address not here is a join.
    current: BTreeSet<(usize, SocketAddr)>,
    /// Never-held peers logged, and when.
    reported: HashMap<SocketAddr, Instant>,
    /// Sockets recorded as the endpoint's by a join, not yet visited since (`take_joined`).
    joined: Vec<Cookie>,
}

impl Members {
    /// The endpoint `cookie` (a socket to `peer`) is the connection of. Recorded the first
    /// time its address is admitted; until then asked again at each visit, so a socket whose
    /// address joins between two `sync`s is not missed.
    pub(crate) fn see(
        &mut self,
        facts: &mut impl Facts,
        cookie: Cookie,
        peer: SocketAddr,
        endpoints: &Endpoints,
        grace: Duration,
        at: Instant,
    ) -> Option<usize> {
        if let Some(i) = facts.endpoint_of(cookie) {
            return Some(i);
        }
        if let Some(i) = endpoints.admits(peer, grace) {
            facts.record(cookie, i);
            return Some(i);
        }
        self.report_never_held(peer, endpoints, grace, at);
        None
    }

    /// Once per sweep, with every watched socket by peer: when the answers changed, the
    /// sockets to an address that joined are the endpoint's from now on, and the peers on an
    /// endpoint's port that no answer ever held are reported (sockets adopted before the
    /// first answer were seen when nothing could be said).
    pub(crate) fn sync<'a>(
        &mut self,
        facts: &mut impl Facts,
        endpoints: &Endpoints,
        grace: Duration,
        peers: impl Iterator<Item = (&'a SocketAddr, &'a HashSet<Cookie>)>,
        at: Instant,
    ) {
        let now = endpoints.current();
        if now == self.current {
            return;
        }
        let joined: HashMap<SocketAddr, usize> = now
            .difference(&self.current)
            .map(|(i, peer)| (*peer, *i))
            .collect();
        self.current = now;
        self.reported
            .retain(|_, t| at.saturating_duration_since(*t) < REPORT_AGAIN);
        for (peer, cookies) in peers {
            if let Some(i) = joined.get(peer) {
                let mut new = 0usize;
                for c in cookies {
                    if facts.record(*c, *i) {
                        new += 1;
                        self.joined.push(*c);
                    }
                }
                if new > 0 {
                    tracing::info!(target: "lifeline::endpoint", event = "joined", peer = %peer,
                        endpoint = %endpoints.name(*i), sockets = new,
                        "{new} watched socket(s) to {peer} are the endpoint's connections from now on: its address is in the endpoint's answers");
                }
            } else if cookies.iter().any(|c| facts.endpoint_of(*c).is_none()) {
                self.report_never_held(*peer, endpoints, grace, at);
            }
        }
    }

    /// The sockets a join made the endpoint's since the last call: each is looked at once
    /// more, so its endpoint rules start (an idle one's looks follow its keepalive cycle from
    /// then on, `EndpointCall::look_in`). A socket older than the endpoint's first answer (an
    /// adopted one, at the agent's start) was visited before it was the endpoint's, and
    /// without news nothing would visit it again.
    pub(crate) fn take_joined(&mut self) -> Vec<Cookie> {
        std::mem::take(&mut self.joined)
    }

    /// One line per peer (per `REPORT_AGAIN`) on an endpoint's port whose address no answer
    /// of that endpoint ever held.
    fn report_never_held(
        &mut self,
        peer: SocketAddr,
        endpoints: &Endpoints,
        grace: Duration,
        at: Instant,
    ) {
        let Some((i, Membership::NeverHeld)) = endpoints.standing(peer, grace) else {
            return;
        };
        if self
            .reported
            .get(&peer)
            .is_some_and(|t| at.saturating_duration_since(*t) < REPORT_AGAIN)
        {
            return;
        }
        if self.reported.len() >= REPORTED_MAX {
            // Bounded memory on a node with many peers on the port: the oldest reports go
            // first; past the bound a peer may be reported again sooner than the hour.
            self.reported
                .retain(|_, t| at.saturating_duration_since(*t) < REPORT_AGAIN);
            if self.reported.len() >= REPORTED_MAX {
                self.reported.clear();
            }
        }
        self.reported.insert(peer, at);
        let endpoint = endpoints.name(i);
        tracing::warn!(target: "lifeline::endpoint", event = "never-held", peer = %peer, endpoint = %endpoint,
            "a watched socket goes to {peer}, on {endpoint}'s port, an address lifeline's answers for {endpoint} never held: \
             not the endpoint's connection, judged by stall and silence only, never by DNS \
             (if it is the API server, this client resolves the name differently from lifeline)");
    }
}

#[cfg(test)]
#[path = "members_tests.rs"]
mod tests;
