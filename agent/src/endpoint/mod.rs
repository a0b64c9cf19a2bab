//! Following the API endpoint: its resolved address set, peer probes, and the healthy
//! endpoint check that keeps lifeline from making an outage worse.

mod arming;
pub(crate) mod connect;
pub(crate) mod discover;
mod early;
mod find;
#[cfg(test)]
mod find_tests;
pub(crate) mod guard;
pub(crate) mod hop;
mod hosts;
pub(crate) mod kubeconfig;
mod kubelet;
mod members;
mod nsswitch;
mod peers;
pub(crate) mod proxy;
mod rediscover;
mod refresh;
mod resolve;
mod set;
pub(crate) mod setup;
mod trust;

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

pub(crate) use arming::{Armed, ArmingRuns, SETTLE};
pub(crate) use guard::Guard;
/// A process's start time from `/proc/PID/stat` (field 22, in clock ticks after boot).
pub(crate) use kubelet::start_time as proc_start_time;
pub(crate) use members::{Facts, Members};
pub(crate) use nsswitch::lookup_order;
pub(crate) use peers::Prober;
pub(crate) use refresh::{Refresh, spawn_refreshers};
pub(crate) use resolve::Resolver;
use serde::{Deserialize, Serialize};
pub(crate) use set::{EndpointSet, Membership, Standing};

/// What `lifeline status` shows of one endpoint.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct EndpointStatus {
    pub endpoint: String,
    pub addrs: Vec<String>,
    pub last_refresh_age_ms: Option<u64>,
    pub failures: u64,
    pub last_error: Option<String>,
}

/// At most this many endpoint sets: the configured ones, and one per port a local proxy's
/// upstreams come to use (`proxy::follow`); a set is never removed, so an index names one
/// set for the agent's whole life.
pub(crate) const MAX_SETS: usize = 32;

type Sets = Arc<std::sync::RwLock<Vec<Arc<Mutex<EndpointSet>>>>>;

/// Every configured endpoint, shared between the refresh tasks and the daemon.
#[derive(Clone, Default)]
pub(crate) struct Endpoints {
    sets: Sets,
    /// Woken when `retarget` changed a set (its refresher then resolves the new name).
    retargeted: Arc<tokio::sync::Notify>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Endpoints {
    #[must_use]
    pub(crate) fn new(list: &[(String, u16)]) -> Self {
        Self::of(
            list.iter()
                .map(|(h, p)| Arc::new(Mutex::new(EndpointSet::new(h, *p))))
                .collect(),
        )
    }

    /// Endpoints of the sets `sets`.
    #[must_use]
    pub(crate) fn of(sets: Vec<Arc<Mutex<EndpointSet>>>) -> Self {
        Self {
            sets: Arc::new(std::sync::RwLock::new(sets)),
            retargeted: Arc::default(),
        }
    }

    /// Adds `set` (a local proxy's upstreams on a port it did not use before); every clone
    /// sees it. `None` when `MAX_SETS` are there already.
    pub(crate) fn add(&self, set: EndpointSet) -> Option<Arc<Mutex<EndpointSet>>> {
        let mut sets = self.sets.write().unwrap_or_else(PoisonError::into_inner);
        if sets.len() >= MAX_SETS {
            return None;
        }
        let set = Arc::new(Mutex::new(set));
        sets.push(Arc::clone(&set));
        Some(set)
    }

    /// Follow `list` from now on (re-discovery: kubelet restarted with another kubeconfig
    /// that names no local proxy), set by set in order: a set whose endpoint changed starts
    /// afresh, as at start, and a local proxy's sets past the list are emptied (kubelet no
    /// longer goes through it). Every clone (the refreshers, the restarter, the daemon) sees
    /// the change. Returns whether a set changed.
    pub(crate) fn retarget(&self, list: &[(String, u16)]) -> bool {
        let mut changed = false;
        let sets = self.sets();
        for (i, set) in sets.iter().enumerate() {
            let mut s = set.lock().unwrap_or_else(PoisonError::into_inner);
            match list.get(i) {
                Some((host, port)) if s.proxied || s.host != *host || s.port != *port => {
                    *s = EndpointSet::new(host, *port);
                    changed = true;
                }
                None if s.proxied => {
                    let name = s.name.clone();
                    *s = EndpointSet::retired(&name, s.port);
                    changed = true;
                }
                _ => {}
            }
        }
        if changed {
            self.retargeted.notify_waiters();
        }
        changed
    }

    /// Woken by `retarget`.
    #[must_use]
    pub(crate) fn retargeted(&self) -> &Arc<tokio::sync::Notify> {
        &self.retargeted
    }

    #[must_use]
    pub(crate) fn is_empty(&self) -> bool {
        self.sets().is_empty()
    }

    /// The sets now (a set added later is not in this copy).
    #[must_use]
    pub(crate) fn sets(&self) -> Vec<Arc<Mutex<EndpointSet>>> {
        self.sets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every set's port.
    #[must_use]
    pub(crate) fn ports(&self) -> std::collections::BTreeSet<u16> {
        self.sets()
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).port)
            .collect()
    }

    /// The endpoint on `peer`'s port and where its address stands in that set (with several
    /// endpoints on one port, the best standing). Says nothing about whether a socket to it
    /// is the endpoint's: that is the recorded fact (`Members`).
    #[must_use]
    pub(crate) fn standing(
        &self,
        peer: SocketAddr,
        grace: Duration,
    ) -> Option<(usize, Membership)> {
        let rank = |m: Membership| match m {
            Membership::InSet => 0,
            Membership::Leaving { .. } => 1,
            Membership::Orphaned { .. } => 2,
            Membership::Unknown => 3,
            Membership::NeverHeld => 4,
        };
        if peer.ip().is_loopback() {
            return None; // a local proxy's socket: see `EndpointSet::membership`
        }
        let mut found: Option<(usize, Membership)> = None;
        for (i, s) in self.sets().iter().enumerate() {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            if s.port != peer.port() {
                continue;
            }
            let m = s.membership(peer.ip(), grace);
            if found.is_none_or(|(_, f)| rank(m) < rank(f)) {
                found = Some((i, m));
            }
        }
        found
    }

    /// The endpoint a socket to `peer` seen now is the connection of, if any (see
    /// `EndpointSet::admits`): the first whose port it is on and whose set holds its address.
    #[must_use]
    pub(crate) fn admits(&self, peer: SocketAddr, grace: Duration) -> Option<usize> {
        self.sets().iter().position(|s| {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            s.port == peer.port() && s.admits(peer.ip(), grace)
        })
    }

    /// A member socket's endpoint (by index) and where its peer stands in that set now. An
    /// address forgotten since (absent over `FORGET_AFTER`) is orphaned for at least that.
    #[must_use]
    pub(crate) fn of_member(
        &self,
        endpoint: usize,
        peer: SocketAddr,
        grace: Duration,
    ) -> (String, Membership) {
        let Some(set) = self.sets().get(endpoint).cloned() else {
            return (String::new(), Membership::Unknown);
        };
        let s = set.lock().unwrap_or_else(PoisonError::into_inner);
        let m = match s.membership(peer.ip(), grace) {
            Membership::NeverHeld => Membership::Orphaned {
                absent_for: set::FORGET_AFTER,
            },
            m => m,
        };
        (s.name.clone(), m)
    }

    /// The name of endpoint `i` (`NAME:PORT`).
    #[must_use]
    pub(crate) fn name(&self, i: usize) -> String {
        self.sets()
            .get(i)
            .map(|s| {
                s.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .name
                    .clone()
            })
            .unwrap_or_default()
    }

    /// Every address of every current answer, with its endpoint (index) and port.
    #[must_use]
    pub(crate) fn current(&self) -> std::collections::BTreeSet<(usize, SocketAddr)> {
        let mut out = std::collections::BTreeSet::new();
        for (i, s) in self.sets().iter().enumerate() {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            out.extend(s.current.iter().map(|ip| (i, SocketAddr::new(*ip, s.port))));
        }
        out
    }

    /// Every address of every current set, with its endpoint's port.
    #[must_use]
    pub(crate) fn targets(&self) -> Vec<SocketAddr> {
        let mut out = Vec::new();
        for s in &self.sets() {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            out.extend(s.current.iter().map(|ip| SocketAddr::new(*ip, s.port)));
        }
        out
    }

    /// Every address a new connection to an endpoint may still use (see
    /// `EndpointSet::within_grace`), with its endpoint's port: the endpoint-client targets.
    #[must_use]
    pub(crate) fn peers_within_grace(
        &self,
        grace: Duration,
    ) -> std::collections::BTreeSet<SocketAddr> {
        let mut out = std::collections::BTreeSet::new();
        for s in &self.sets() {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            out.extend(
                s.within_grace(grace)
                    .filter(|ip| !ip.is_loopback())
                    .map(|ip| SocketAddr::new(ip, s.port)),
            );
        }
        out
    }

    /// The first address of the current sets to accept a TCP connection within 1 s, if any.
    pub(crate) async fn any_accepts(&self) -> Option<SocketAddr> {
        connect::any_accepts(&self.targets()).await
    }

    #[must_use]
    pub(crate) fn status(&self, now: Instant) -> Vec<EndpointStatus> {
        self.sets()
            .iter()
            .map(|s| {
                let s = s.lock().unwrap_or_else(PoisonError::into_inner);
                EndpointStatus {
                    endpoint: s.name.clone(),
                    addrs: s.current.iter().map(ToString::to_string).collect(),
                    last_refresh_age_ms: s
                        .last_success
                        .map(|t| ms(now.saturating_duration_since(t))),
                    failures: s.failures,
                    last_error: s.last_error.clone(),
                }
            })
            .collect()
    }
}

/// Everything the daemon needs to follow the endpoints.
pub(crate) struct Follow {
    /// Where the endpoints came from (`lifeline status` names it); re-discovery changes it.
    pub source: discover::Followed,
    pub endpoints: Endpoints,
    pub prober: Prober,
    pub guard: Guard,
    /// How the guard checks the endpoint (and the prober tries its peers).
    pub connect: Arc<dyn connect::Connect>,
    pub grace: Duration,
    /// kubelet's local proxy, when its endpoint is one (`lifeline status` shows the hop).
    pub hop: Option<proxy::follow::Shared>,
    /// Where kubelet's loopback endpoint is now (re-discovery moves it).
    pub steer: Option<proxy::follow::Steer>,
}

impl Follow {
    /// The ports the probe must watch for the endpoint now: every set's (a proxy's reload
    /// or a restarted kubelet may add one) and kubelet's loopback endpoint's.
    #[must_use]
    pub(crate) fn ports(&self) -> std::collections::BTreeSet<u16> {
        let mut p = self.endpoints.ports();
        p.extend(
            self.steer
                .as_ref()
                .and_then(proxy::follow::Steer::listen)
                .map(|l| l.port()),
        );
        p
    }

    /// Where the endpoints come from, with the hop through a local proxy if there is one.
    #[must_use]
    pub(crate) fn describe(&self) -> String {
        let hop = self
            .hop
            .as_ref()
            .and_then(|h| h.lock().unwrap_or_else(PoisonError::into_inner).clone());
        match hop {
            Some(p) => format!("{}; {p}", self.source),
            None => self.source.to_string(),
        }
    }
}

/// `NAME:PORT, ...` as `lifeline status` names them.
#[must_use]
pub(crate) fn names(list: &[(String, u16)]) -> String {
    let names: Vec<String> = list.iter().map(|(h, p)| set::name(h, *p)).collect();
    names.join(", ")
}
