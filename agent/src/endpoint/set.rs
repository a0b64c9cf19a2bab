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

/// An address absent from the answers this long is forgotten.
pub const FORGET_AFTER: Duration = Duration::from_hours(1);

pub use lifeline_judge::Membership;

#[derive(Debug)]
pub struct EndpointSet {
    /// `host:port` as configured, for logs and status.
    pub name: String,
    pub host: String,
    pub port: u16,
    /// An IP literal: the set never changes and needs no DNS.
    pub fixed: bool,
    pub current: BTreeSet<IpAddr>,
    /// Each address seen in an answer: since when successful answers have lacked it
    /// (`None`: in the latest answer). Only answers put an address here.
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
        self.absent_since
            .retain(|_, since| since.is_none_or(|t| now.duration_since(t) < FORGET_AFTER));
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

    /// Where `ip` stands, with the grace applied. Only what the answers held counts: an
    /// address no answer held is `NeverHeld`, never "absent since the first answer" (a peer
    /// on the endpoint's port is not the endpoint's by its port alone).
    #[must_use]
    pub fn membership(&self, ip: IpAddr, grace: Duration) -> Membership {
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
                    Membership::Leaving { absent_for }
                }
            }
        }
    }

    /// Whether a socket to `ip` seen now is this endpoint's connection: its address is in
    /// the latest answer, or left it less than `grace` ago (a client may dial from an answer
    /// it cached, as the endpoint-client watch assumes; the orphan rule then moves it).
    #[must_use]
    pub fn admits(&self, ip: IpAddr, grace: Duration) -> bool {
        matches!(
            self.membership(ip, grace),
            Membership::InSet | Membership::Leaving { .. }
        )
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
    fn literal_is_a_fixed_set_and_other_peers_are_never_held() {
        let s = EndpointSet::new("198.51.100.2", 6443);
        assert!(s.fixed);
        assert_eq!(
            s.membership(IpAddr::from([198, 51, 100, 2]), GRACE),
            Membership::InSet
        );
        assert_eq!(
            s.membership(IpAddr::from([198, 51, 100, 9]), GRACE),
            Membership::NeverHeld,
            "not this endpoint's"
        );
        assert!(!s.admits(IpAddr::from([198, 51, 100, 9]), GRACE));
        assert_eq!(
            EndpointSet::new("2001:db8::2", 443).name,
            "[2001:db8::2]:443"
        );
    }

    #[test]
    fn an_address_no_answer_held_is_never_absent_nor_orphaned() {
        let (mut d, t0) = (EndpointSet::new("api", 6443), Instant::now());
        let outside = IpAddr::from([198, 51, 100, 9]);
        assert_eq!(d.membership(outside, GRACE), Membership::Unknown);
        for i in 0..10u32 {
            d.update(ips(&[3]), t0 + Duration::from_secs(30) * i);
            assert_eq!(
                d.membership(outside, GRACE),
                Membership::NeverHeld,
                "older than the agent or not, its port alone makes it no member"
            );
        }
        assert!(!d.admits(outside, GRACE));
        assert!(
            d.within_grace(GRACE).all(|ip| ip != outside),
            "looking never adds it"
        );
    }

    #[test]
    fn admits_the_answer_and_the_grace_only() {
        let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
        let old = IpAddr::from([198, 51, 100, 2]);
        s.update(ips(&[2]), t0);
        assert!(s.admits(old, GRACE));
        s.update(ips(&[3]), t0 + Duration::from_secs(5));
        assert!(s.admits(old, GRACE), "left 0 s ago: a cached answer");
        s.update(ips(&[3]), t0 + Duration::from_secs(40));
        assert!(!s.admits(old, GRACE), "left past the grace");
        s.update(ips(&[3]), t0 + FORGET_AFTER + Duration::from_secs(10));
        assert_eq!(s.membership(old, GRACE), Membership::NeverHeld, "forgotten");
    }
}
