//! One endpoint's address set, with the semantics round-robin DNS cannot fool.
//!
//! Order never matters (a sorted set). An address is *leaving* from the first successful
//! answer that lacks it, and *orphaned* once successful answers have lacked it for the whole
//! grace: a server that returns rotating subsets shows every address again long before that.
//! Only successful answers move the clock, so a DNS outage (timeout, SERVFAIL, NXDOMAIN, an
//! empty answer) keeps the last good set and never orphans anything.

use std::{
    collections::{BTreeSet, HashMap},
    net::IpAddr,
    time::{Duration, Instant},
};

// A sibling file, declared beside the set whose rule it names (re-exported through it).
#[path = "membership.rs"]
mod membership;
// What arming reads of the set (`arming.rs`): a child, so it sees the set's own fields.
#[path = "set_arming.rs"]
mod set_arming;
pub(crate) use membership::{Membership, Standing};

/// An address absent from the answers this long is forgotten.
pub(super) const FORGET_AFTER: Duration = Duration::from_hours(1);

#[derive(Debug)]
pub(crate) struct EndpointSet {
    /// `host:port` as configured, for logs and status.
    pub name: String,
    pub host: String,
    pub port: u16,
    /// An IP literal: the set never changes and needs no DNS.
    pub fixed: bool,
    /// A local proxy's upstreams on `port`: filled from its configuration (`proxy::follow`),
    /// never by DNS.
    pub proxied: bool,
    pub current: BTreeSet<IpAddr>,
    /// Each address seen in an answer: since when successful answers have lacked it
    /// (`None`: in the latest answer). Only answers put an address here.
    absent_since: HashMap<IpAddr, Option<Instant>>,
    pub last_success: Option<Instant>,
    pub last_attempt: Option<Instant>,
    pub failures: u64,
    pub last_error: Option<String>,
    /// When an answer last brought back an address that had left an earlier one (a server
    /// answering with rotating subsets): a leaving address is then no sign of a move.
    returned: Option<Instant>,
    /// Re-resolve requests on a socket's first sign of trouble (`early.rs`).
    pub early: super::early::Early,
    /// When a successful answer last held each address (forgotten with `absent_since`).
    held_at: HashMap<IpAddr, Instant>,
    /// The first successful answer's addresses, and those given as IP literals (the
    /// proxy's list): they arm the endpoint-client watch at once (`arming.rs`).
    trusted: BTreeSet<IpAddr>,
}

/// `NAME:PORT`, an IPv6 literal in brackets: how status and logs name an endpoint.
#[must_use]
pub(super) fn name(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl EndpointSet {
    #[must_use]
    pub(crate) fn new(host: &str, port: u16) -> Self {
        let literal: Option<IpAddr> = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok();
        let mut s = Self {
            name: name(host, port),
            host: host.to_owned(),
            port,
            fixed: literal.is_some(),
            proxied: false,
            current: BTreeSet::new(),
            absent_since: HashMap::new(),
            last_success: None,
            last_attempt: None,
            failures: 0,
            last_error: None,
            returned: None,
            early: super::early::Early::default(),
            held_at: HashMap::new(),
            trusted: BTreeSet::new(),
        };
        if let Some(ip) = literal {
            s.update(BTreeSet::from([ip]), Instant::now());
        }
        s
    }

    /// The upstreams of kubelet's local proxy `proxy` on `port` (filled by its follower).
    #[must_use]
    pub(crate) fn proxied(proxy: &str, port: u16) -> Self {
        let mut s = Self::new(&format!("{proxy}-upstreams"), port);
        s.proxied = true;
        s
    }

    /// A local proxy's set that kubelet no longer goes through: empty and fresh, named as
    /// before (its sockets are no longer the endpoint's).
    #[must_use]
    pub(crate) fn retired(name: &str, port: u16) -> Self {
        let mut s = Self::new("retired", port);
        name.clone_into(&mut s.name);
        s.proxied = true;
        s
    }

    /// A successful answer. Returns whether the set changed.
    pub(crate) fn update(&mut self, addrs: BTreeSet<IpAddr>, now: Instant) -> bool {
        let changed = addrs != self.current;
        if self.last_success.is_none() {
            // What the node used before lifeline could compare: nothing to wait for.
            self.trusted.extend(addrs.iter().copied());
        }
        for (ip, since) in &mut self.absent_since {
            if addrs.contains(ip) {
                if since.take().is_some() {
                    self.returned = Some(now);
                }
            } else {
                since.get_or_insert(now);
            }
        }
        for ip in &addrs {
            self.absent_since.insert(*ip, None);
            self.held_at.insert(*ip, now);
        }
        // Forget addresses gone for an hour: no socket can still be waiting on them.
        self.absent_since
            .retain(|_, since| since.is_none_or(|t| now.duration_since(t) < FORGET_AFTER));
        let known = &self.absent_since;
        self.held_at.retain(|ip, _| known.contains_key(ip));
        self.current = addrs;
        self.last_success = Some(now);
        self.last_attempt = Some(now);
        self.last_error = None;
        changed
    }

    /// A failed resolution: counted and remembered; the set stays as it was.
    pub(crate) fn fail(&mut self, error: String, now: Instant) {
        self.failures += 1;
        self.last_error = Some(error);
        self.last_attempt = Some(now);
    }

    /// Addresses a new connection may still use: the latest answer's, and those that left
    /// it less than `grace` ago (measured up to the last successful answer, as `membership`).
    pub(crate) fn within_grace(&self, grace: Duration) -> impl Iterator<Item = IpAddr> + '_ {
        let last = self.last_success;
        self.absent_since
            .iter()
            .filter_map(move |(ip, since)| match (since, last) {
                (None, _) => Some(*ip),
                (Some(t), Some(l)) if l.saturating_duration_since(*t) < grace => Some(*ip),
                _ => None,
            })
    }

    /// Where `ip` stands, with the grace applied. Only what the answers held counts: an
    /// address no answer held is `NeverHeld`, never "absent since the first answer" (a peer
    /// on the endpoint's port is not the endpoint's by its port alone).
    #[must_use]
    pub(crate) fn membership(&self, ip: IpAddr, grace: Duration) -> Membership {
        // A loopback peer is a local proxy, never the API server: kubelet's socket to it is
        // acked by the proxy, and the endpoint rules (orphan, dead peer) would judge the
        // wrong hop. Its stall still counts (the rules of every watched socket).
        if ip.is_loopback() {
            return Membership::NeverHeld;
        }
        if self.fixed {
            return if self.current.contains(&ip) {
                Membership::InSet
            } else {
                Membership::NeverHeld
            };
        }
        let Some(last) = self.last_success else {
            return Membership::Unknown;
        };
        match self.absent_since.get(&ip) {
            None => Membership::NeverHeld,
            Some(None) => Membership::InSet,
            Some(Some(t)) => {
                // Measured up to the last successful answer only: failures prove nothing.
                let absent_for = last.saturating_duration_since(*t);
                if absent_for >= grace {
                    Membership::Orphaned { absent_for }
                } else {
                    // Within the last hour: a rotating server shows every address often.
                    let rotates = self
                        .returned
                        .is_some_and(|r| last.saturating_duration_since(r) < FORGET_AFTER);
                    Membership::Leaving {
                        absent_for,
                        rotates,
                    }
                }
            }
        }
    }

    /// Whether a socket to `ip` seen now is this endpoint's connection: its address is in
    /// the latest answer, or left it less than `grace` ago (a client may dial from an answer
    /// it cached, as the endpoint-client watch assumes; the orphan rule then moves it).
    #[must_use]
    pub(crate) fn admits(&self, ip: IpAddr, grace: Duration) -> bool {
        matches!(
            self.membership(ip, grace),
            Membership::InSet | Membership::Leaving { .. }
        )
    }
}

#[cfg(test)]
#[path = "set_tests.rs"]
mod tests;
