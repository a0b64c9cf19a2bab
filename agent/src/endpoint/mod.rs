//! Following the API endpoint: its resolved address set, peer probes, and the healthy
//! endpoint check that keeps lifeline from making an outage worse.

pub mod connect;
pub mod discover;
pub mod guard;
mod hosts;
pub mod kubeconfig;
mod kubelet;
mod nsswitch;
mod peers;
mod rediscover;
mod refresh;
mod resolve;
mod set;
pub mod setup;
mod trust;

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize};

pub use guard::Guard;
pub use nsswitch::lookup_order;
pub use peers::Prober;
pub use refresh::{Refresh, spawn_refreshers};
pub use resolve::Resolver;
pub use set::{EndpointSet, Membership};

/// What `lifeline status` shows of one endpoint.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EndpointStatus {
    pub endpoint: String,
    pub addrs: Vec<String>,
    pub last_refresh_age_ms: Option<u64>,
    pub failures: u64,
    pub last_error: Option<String>,
}

/// Every configured endpoint, shared between the refresh tasks and the daemon.
#[derive(Clone, Default)]
pub struct Endpoints {
    sets: Vec<Arc<Mutex<EndpointSet>>>,
    /// Woken when `retarget` changed a set (its refresher then resolves the new name).
    retargeted: Arc<tokio::sync::Notify>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Endpoints {
    #[must_use]
    pub fn new(list: &[(String, u16)]) -> Self {
        Self {
            sets: list
                .iter()
                .map(|(h, p)| Arc::new(Mutex::new(EndpointSet::new(h, *p))))
                .collect(),
            retargeted: Arc::default(),
        }
    }

    /// Follow `list` from now on (re-discovery: kubelet restarted with another kubeconfig),
    /// set by set in order: a set whose endpoint changed starts afresh, as at start. Every
    /// clone (the refreshers, the restarter, the daemon) sees the change. Returns whether a
    /// set changed.
    pub fn retarget(&self, list: &[(String, u16)]) -> bool {
        let mut changed = false;
        for (set, (host, port)) in self.sets.iter().zip(list) {
            let mut s = set.lock().unwrap_or_else(PoisonError::into_inner);
            if s.host != *host || s.port != *port {
                *s = EndpointSet::new(host, *port);
                changed = true;
            }
        }
        if changed {
            self.retargeted.notify_waiters();
        }
        changed
    }

    /// Woken by `retarget`.
    #[must_use]
    pub fn retargeted(&self) -> &Arc<tokio::sync::Notify> {
        &self.retargeted
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    #[must_use]
    pub fn sets(&self) -> &[Arc<Mutex<EndpointSet>>] {
        &self.sets
    }

    /// The endpoint a socket to `peer` belongs to (same port), and where its address stands.
    /// With several endpoints on one port, being in any set is enough.
    #[must_use]
    pub fn membership(&self, peer: SocketAddr, grace: Duration) -> Option<(String, Membership)> {
        let mut found: Option<(String, Membership)> = None;
        for s in &self.sets {
            let mut s = s.lock().unwrap_or_else(PoisonError::into_inner);
            if s.port != peer.port() {
                continue;
            }
            let m = s.membership(peer.ip(), grace);
            if found.is_none()
                || m == Membership::InSet
                || found.as_ref().is_some_and(|f| f.1 == Membership::Unknown)
            {
                found = Some((s.name.clone(), m));
            }
        }
        found
    }

    /// Every address of every current set, with its endpoint's port.
    #[must_use]
    pub fn targets(&self) -> Vec<SocketAddr> {
        let mut out = Vec::new();
        for s in &self.sets {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            out.extend(s.current.iter().map(|ip| SocketAddr::new(*ip, s.port)));
        }
        out
    }

    /// Every address a new connection to an endpoint may still use (see
    /// `EndpointSet::within_grace`), with its endpoint's port: the endpoint-client targets.
    #[must_use]
    pub fn peers_within_grace(&self, grace: Duration) -> std::collections::BTreeSet<SocketAddr> {
        let mut out = std::collections::BTreeSet::new();
        for s in &self.sets {
            let s = s.lock().unwrap_or_else(PoisonError::into_inner);
            out.extend(s.within_grace(grace).map(|ip| SocketAddr::new(ip, s.port)));
        }
        out
    }

    /// Whether at least one address of the current sets accepts a TCP connection within 1 s.
    pub async fn any_accepts(&self) -> bool {
        connect::any_accepts(&self.targets()).await
    }

    #[must_use]
    pub fn status(&self, now: Instant) -> Vec<EndpointStatus> {
        self.sets
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
pub struct Follow {
    /// Where the endpoints came from (`lifeline status` names it); re-discovery changes it.
    pub source: discover::Followed,
    pub endpoints: Endpoints,
    pub prober: Prober,
    pub guard: Guard,
    pub grace: Duration,
}
