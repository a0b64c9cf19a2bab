//! The agent's copy of the probe's records, kept current by the probe's news.
//!
//! A record changes only in a `sock_ops` callback, and the probe pushes news for each change
//! that matters (recorded, a trouble episode began, a state change, closed, keepalive probes
//! unanswered, the application's keepalive merged; `lifeline_common::news`), so the agent re-reads one record per news item instead of the
//! whole map every sweep. Two exceptions, covered here: inside a trouble episode the
//! callbacks update the record (retransmissions, RTOs) without news, so a troubled record
//! is re-read whenever its socket is looked at; and news can be lost (a full ring buffer,
//! counted by the probe), so a lost item, and a slow timer, trigger a whole read.

use std::{
    collections::{HashMap, HashSet},
    net::SocketAddr,
    time::{Duration, Instant},
};

use crate::judge::{Cookie, Record};

/// A whole read this often even without lost news: a safety net, not the mechanism.
pub(crate) const RECONCILE: Duration = Duration::from_mins(1);

#[derive(Default)]
pub(crate) struct Mirror {
    records: HashMap<Cookie, Record>,
    by_peer: HashMap<SocketAddr, HashSet<Cookie>>,
    /// Records in a trouble episode.
    troubled: HashSet<Cookie>,
    read_at: Option<Instant>,
    /// The probe's lost-news counter at the last whole read.
    lost: u64,
}

impl Mirror {
    /// Whether this sweep must read the whole map: never read yet, news lost since the last
    /// whole read, or `RECONCILE` has passed.
    #[must_use]
    pub(crate) fn whole_read_due(&self, at: Instant, news_lost: u64) -> bool {
        news_lost > self.lost || self.read_at.is_none_or(|t| at >= t + RECONCILE)
    }

    /// Replace everything with a whole read of the map; returns the cookies that were
    /// mirrored and are gone, and those that are new or changed (news that was lost).
    pub(crate) fn replace(
        &mut self,
        all: Vec<(Cookie, Record)>,
        at: Instant,
        news_lost: u64,
    ) -> (Vec<Cookie>, Vec<Cookie>) {
        let fresh: HashSet<Cookie> = all.iter().map(|(c, _)| *c).collect();
        let gone: Vec<Cookie> = self
            .records
            .keys()
            .filter(|c| !fresh.contains(c))
            .copied()
            .collect();
        for c in &gone {
            self.remove(*c);
        }
        let mut changed = Vec::new();
        for (c, rec) in all {
            if self.records.get(&c) != Some(&rec) {
                changed.push(c);
                self.upsert(c, rec);
            }
        }
        self.read_at = Some(at);
        self.lost = news_lost;
        (gone, changed)
    }

    pub(crate) fn upsert(&mut self, cookie: Cookie, rec: Record) {
        let peer = rec.peer;
        if rec.trouble.is_none() {
            self.troubled.remove(&cookie);
        } else {
            self.troubled.insert(cookie);
        }
        if let Some(old) = self.records.insert(cookie, rec)
            && old.peer != peer
        {
            self.unlink(cookie, old.peer);
        }
        self.by_peer.entry(peer).or_default().insert(cookie);
    }

    pub(crate) fn remove(&mut self, cookie: Cookie) -> Option<Record> {
        let rec = self.records.remove(&cookie)?;
        self.troubled.remove(&cookie);
        self.unlink(cookie, rec.peer);
        Some(rec)
    }

    fn unlink(&mut self, cookie: Cookie, peer: SocketAddr) {
        if let Some(set) = self.by_peer.get_mut(&peer) {
            set.remove(&cookie);
            if set.is_empty() {
                self.by_peer.remove(&peer);
            }
        }
    }

    #[must_use]
    pub(crate) fn get(&self, cookie: Cookie) -> Option<&Record> {
        self.records.get(&cookie)
    }

    #[must_use]
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn cookies(&self) -> impl Iterator<Item = Cookie> + '_ {
        self.records.keys().copied()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (Cookie, &Record)> {
        self.records.iter().map(|(c, r)| (*c, r))
    }

    /// Each distinct peer and its sockets.
    pub(crate) fn peers(&self) -> impl Iterator<Item = (&SocketAddr, &HashSet<Cookie>)> {
        self.by_peer.iter()
    }

    /// Records in a trouble episode.
    pub(crate) fn troubled(&self) -> impl Iterator<Item = Cookie> + '_ {
        self.troubled.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Mono;

    fn rec(peer_port: u16, trouble_ns: u64) -> Record {
        Record {
            peer: SocketAddr::from(([0, 0, 0, 0], peer_port)),
            trouble: (trouble_ns != 0).then(|| Mono::from_nanos(trouble_ns)),
            ..Record::default()
        }
    }
    const ONE: Cookie = Cookie(1);
    const TWO: Cookie = Cookie(2);
    const THREE: Cookie = Cookie(3);

    #[test]
    fn indexes_follow_every_change_and_a_whole_read_replaces() {
        let at = Instant::now();
        let mut m = Mirror::default();
        assert!(m.whole_read_due(at, 0), "never read");
        m.replace(vec![(ONE, rec(6443, 0)), (TWO, rec(6443, 5))], at, 0);
        assert!(!m.whole_read_due(at, 0));
        assert!(m.whole_read_due(at, 1), "news lost");
        assert!(m.whole_read_due(at + RECONCILE, 0));
        assert_eq!(m.troubled().collect::<Vec<_>>(), [TWO]);
        m.upsert(TWO, rec(443, 0));
        assert_eq!(m.troubled().count(), 0);
        assert_eq!(m.peers().count(), 2, "one socket moved to another peer");
        let (gone, changed) = m.replace(vec![(TWO, rec(443, 0)), (THREE, rec(443, 0))], at, 0);
        assert_eq!((gone, changed), (vec![ONE], vec![THREE]), "2 is unchanged");
        assert_eq!(m.peers().count(), 1);
        assert!(m.remove(TWO).is_some() && m.remove(THREE).is_some());
        assert_eq!((m.len(), m.peers().count()), (0, 0));
    }
}
