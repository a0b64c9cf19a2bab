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

/// Where a peer address stands relative to the endpoint's set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    InSet,
    /// Missing from the answers, for less than the grace so far.
    Leaving {
        absent_for: Duration,
    },
    /// Missing from every successful answer for at least the grace.
    Orphaned {
        absent_for: Duration,
    },
    /// No successful answer yet: nothing can be said.
    Unknown,
}

impl Membership {
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::InSet => "in-set",
            Self::Leaving { .. } => "leaving",
            Self::Orphaned { .. } => "orphaned",
            Self::Unknown => "unknown",
        }
    }
}

#[derive(Debug)]
pub struct EndpointSet {
    /// `host:port` as configured, for logs and status.
    pub name: String,
    pub host: String,
    pub port: u16,
    /// An IP literal: the set never changes and needs no DNS.
    pub fixed: bool,
    pub current: BTreeSet<IpAddr>,
    /// Each address seen in an answer or as a socket's peer: since when successful answers
    /// have lacked it (`None`: in the latest answer).
    absent_since: HashMap<IpAddr, Option<Instant>>,
    pub last_success: Option<Instant>,
    pub last_attempt: Option<Instant>,
    pub failures: u64,
    pub last_error: Option<String>,
}

/// `NAME:PORT`, an IPv6 literal in brackets: how status and logs name an endpoint.
#[must_use]
pub fn name(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl EndpointSet {
    #[must_use]
    pub fn new(host: &str, port: u16) -> Self {
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
            current: BTreeSet::new(),
            absent_since: HashMap::new(),
            last_success: None,
            last_attempt: None,
            failures: 0,
            last_error: None,
        };
        if let Some(ip) = literal {
            s.update(BTreeSet::from([ip]), Instant::now());
        }
        s
    }

    /// A successful answer. Returns whether the set changed.
    pub fn update(&mut self, addrs: BTreeSet<IpAddr>, now: Instant) -> bool {
        let changed = addrs != self.current;
        for (ip, since) in &mut self.absent_since {
            if addrs.contains(ip) {
                *since = None;
            } else {
                since.get_or_insert(now);
            }
        }
        for ip in &addrs {
            self.absent_since.insert(*ip, None);
        }
        // Forget addresses gone for an hour: no socket can still be waiting on them.
        self.absent_since.retain(|_, since| {
            since.is_none_or(|t| now.duration_since(t) < Duration::from_hours(1))
        });
        self.current = addrs;
        self.last_success = Some(now);
        self.last_attempt = Some(now);
        self.last_error = None;
        changed
    }

    /// A failed resolution: counted and remembered; the set stays as it was.
    pub fn fail(&mut self, error: String, now: Instant) {
        self.failures += 1;
        self.last_error = Some(error);
        self.last_attempt = Some(now);
    }

    /// Addresses a new connection may still use: the latest answer's, and those that left
    /// it less than `grace` ago (measured up to the last successful answer, as `membership`).
    pub fn within_grace(&self, grace: Duration) -> impl Iterator<Item = IpAddr> + '_ {
        let last = self.last_success;
        self.absent_since
            .iter()
            .filter_map(move |(ip, since)| match (since, last) {
                (None, _) => Some(*ip),
                (Some(t), Some(l)) if l.saturating_duration_since(*t) < grace => Some(*ip),
                _ => None,
            })
    }

    /// Where `ip` stands, with the grace applied. A peer never seen in any answer (a socket
    /// older than the agent, to an address that had already left) counts as absent since
    /// the first successful answer.
    pub fn membership(&mut self, ip: IpAddr, grace: Duration) -> Membership {
        if self.fixed {
            return if self.current.contains(&ip) {
                Membership::InSet
            } else {
                Membership::Unknown
            };
        }
        let Some(last) = self.last_success else {
            return Membership::Unknown;
        };
        let since = *self.absent_since.entry(ip).or_insert(Some(last));
        match since {
            None => Membership::InSet,
            Some(t) => {
                // Measured up to the last successful answer only: failures prove nothing.
                let absent_for = last.saturating_duration_since(t);
                if absent_for >= grace {
                    Membership::Orphaned { absent_for }
                } else {
                    Membership::Leaving { absent_for }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(30);

    fn ips(v: &[u8]) -> BTreeSet<IpAddr> {
        v.iter().map(|d| IpAddr::from([198, 51, 100, *d])).collect()
    }

    #[test]
    fn within_grace_keeps_a_leaving_address_until_the_grace_ends() {
        let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
        s.update(ips(&[2, 3]), t0);
        s.update(ips(&[3]), t0 + Duration::from_secs(1));
        s.update(ips(&[3]), t0 + Duration::from_secs(20));
        let got: BTreeSet<IpAddr> = s.within_grace(GRACE).collect();
        assert_eq!(got, ips(&[2, 3]));
        s.update(ips(&[3]), t0 + Duration::from_secs(40));
        let got: BTreeSet<IpAddr> = s.within_grace(GRACE).collect();
        assert_eq!(got, ips(&[3]));
    }

    #[test]
    fn rotating_subsets_never_orphan_anyone() {
        let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
        let subsets: [&[u8]; 3] = [&[2, 3], &[3, 4], &[4, 2]];
        for i in 0..24u32 {
            s.update(
                ips(subsets[i as usize % 3]),
                t0 + Duration::from_secs(5) * i,
            );
        }
        for d in [2, 3, 4] {
            assert!(matches!(
                s.membership(IpAddr::from([198, 51, 100, d]), GRACE),
                Membership::InSet | Membership::Leaving { .. }
            ));
        }
    }

    #[test]
    fn gone_after_the_grace_of_successful_answers_only() {
        let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
        let old = IpAddr::from([198, 51, 100, 2]);
        s.update(ips(&[2]), t0);
        s.update(ips(&[3]), t0 + Duration::from_secs(5));
        assert!(matches!(
            s.membership(old, GRACE),
            Membership::Leaving { .. }
        ));
        // DNS down for a minute: failures do not move the clock.
        for i in 1..12u32 {
            s.fail("timeout".into(), t0 + Duration::from_secs(5) * (i + 1));
        }
        assert!(
            matches!(s.membership(old, GRACE), Membership::Leaving { .. }),
            "a DNS failure never orphans"
        );
        s.update(ips(&[3]), t0 + Duration::from_secs(40));
        assert_eq!(
            s.membership(old, GRACE),
            Membership::Orphaned {
                absent_for: Duration::from_secs(35)
            }
        );
        assert_eq!(s.failures, 11);
    }

    #[test]
    fn literal_is_a_fixed_set_and_unknown_peers_start_absent() {
        let mut s = EndpointSet::new("198.51.100.2", 6443);
        assert!(s.fixed);
        assert_eq!(
            s.membership(IpAddr::from([198, 51, 100, 2]), GRACE),
            Membership::InSet
        );
        assert_eq!(
            s.membership(IpAddr::from([198, 51, 100, 9]), GRACE),
            Membership::Unknown,
            "not this endpoint's"
        );
        let mut d = EndpointSet::new("api", 6443);
        d.update(ips(&[3]), Instant::now());
        assert!(
            matches!(
                d.membership(IpAddr::from([198, 51, 100, 9]), GRACE),
                Membership::Leaving { .. }
            ),
            "older than the agent"
        );
        assert_eq!(
            EndpointSet::new("2001:db8::2", 443).name,
            "[2001:db8::2]:443"
        );
    }
}
