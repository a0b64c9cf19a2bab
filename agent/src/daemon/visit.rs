//! Which sockets a sweep visits: the ones with news, and the ones something is due for. A
//! healthy socket nobody talks to costs nothing here; work grows with what is wrong.
//!
//! - news: recorded, a trouble episode began, a state change, keepalive probes unanswered
//!   from the threshold on, the application's keepalive merged (each re-reads that one
//!   record; a close forgets it; the first unanswered probe of a socket that is not an
//!   endpoint's is kept as the kernel's word, `Judge::unanswered`, with no read: at 100,000
//!   idle sockets a lost answer is routine);
//!   trouble or an unanswered probe of an endpoint's socket also re-resolves its endpoint now
//!   (`endpoint::early`: a rotated endpoint is followed without waiting for its TTL);
//! - sockets the judge has business with now (`Judge::due`: pending rules, looks the idle
//!   rules scheduled, healthy sockets whose record turns idle now), records in a trouble
//!   episode no look has found over, pre-existing sockets that are polled;
//! - every endpoint socket (`endpoint::Members`) of a peer that is in question (a failing peer
//!   probe, left or leaving the endpoint's DNS set), and every socket while a kill awaits its
//!   endpoint's recovery;
//! - what a whole read of the map finds new or changed, when news was lost or `RECONCILE`
//!   passed (the first sweep reads the whole map, so it visits every socket).

use std::{
    collections::{BTreeSet, HashSet},
    time::Instant,
};

use anyhow::Result;
use lifeline_common::news::{self, News};

use super::Daemon;
use crate::{
    endpoint::Membership,
    judge::{Cookie, Mono, PeerProbe, Record},
};

impl Daemon {
    pub(super) fn visits(
        &mut self,
        news: &[News],
        adopted: &HashSet<Cookie>,
        lost: u64,
        now: Mono,
    ) -> Result<Vec<Cookie>> {
        let mut read: BTreeSet<Cookie> = adopted.iter().copied().collect();
        let mut fresh = BTreeSet::new();
        let at = Instant::now();
        if self.mirror.whole_read_due(at, lost) {
            let (gone, changed) = self.mirror.replace(self.kernel.records()?, at, lost);
            for c in gone {
                self.gone(c);
            }
            for c in &changed {
                if let Some(rec) = self.mirror.get(*c) {
                    self.judge.recorded(*c, rec);
                }
            }
            fresh.extend(changed);
            // The read's copy of every record is freed: at 100,000 sockets, tens of MB.
            crate::node::memory::release_freed();
        }
        for n in news {
            let cookie = Cookie(n.cookie);
            match n.kind {
                news::CLOSE => {
                    self.gone(cookie);
                }
                news::UNANSWERED => {
                    if n.arg == 1 && self.kernel.fast_interval().is_some() {
                        let first = self.tracked.open_fast(cookie, now);
                        self.fast.opened(first, now);
                    }
                    self.resolve_early(cookie, at);
                    // The first unanswered probe is kept as the kernel's word, not read.
                    // Read at the first all the same: an endpoint's socket (its look asks
                    // the peer probe), and one whose deferral is due at it.
                    let due = self.tracked.endpoint_of(cookie).is_some()
                        || self.defer_due_at_first(cookie);
                    if self.judge.unanswered(cookie, n.arg, due, now) {
                        read.insert(cookie);
                    }
                }
                news::TROUBLE => {
                    self.resolve_early(cookie, at);
                    read.insert(cookie);
                }
                _ => {
                    read.insert(cookie);
                }
            }
        }
        let mut visit = fresh.clone();
        visit.extend(read.iter().copied());
        visit.extend(self.judge.due(now));
        visit.extend(self.tracked.polled());
        visit.extend(self.members.take_joined());
        visit.extend(self.mirror.troubled().filter(|c| {
            self.mirror
                .get(*c)
                .is_some_and(|rec| self.judge.in_trouble(*c, rec, now))
        }));
        if self.judge.awaits_recovery() {
            visit.extend(self.mirror.cookies());
        } else {
            visit.extend(self.peers_in_question());
        }
        // Re-read what the probe may have changed without news: a trouble episode's record
        // changes on every retransmission, and a look decides on the record as it is now.
        read.extend(visit.difference(&fresh).copied());
        // Visited, and so killed, in the order of their cookies: which sockets a short
        // budget lets through is the same on every run.
        for c in read {
            if let Some(rec) = self.kernel.record(c)? {
                self.mirror.upsert(c, rec);
                self.judge.recorded(c, &rec);
            } else {
                self.gone(c);
                visit.remove(&c);
            }
        }
        Ok(visit.into_iter().collect())
    }

    /// The first sign of trouble on `cookie` (news, or a look that found its probe's answer
    /// overdue): when it is an endpoint's socket, re-resolve that endpoint now rather than at
    /// its TTL (at most once a second per endpoint).
    pub(super) fn resolve_early(&self, cookie: Cookie, at: Instant) {
        let (Some(f), Some(i)) = (self.follow.as_ref(), self.tracked.endpoint_of(cookie)) else {
            return;
        };
        if f.endpoints.resolve_early(i, at) {
            tracing::debug!(target: "lifeline::endpoint", endpoint = %f.endpoints.name(i), cookie = cookie.0,
                "trouble on one of its sockets: re-resolving it now, not at its TTL");
        }
    }

    /// Whether the socket is the endpoint's connection (the recorded fact, decided at first
    /// sight), with its endpoint and where its peer stands, and its peer's latest probe. Only the endpoint's own sockets are judged by DNS and the probe.
    pub(super) fn endpoint_fact(
        &mut self,
        cookie: Cookie,
        rec: &Record,
    ) -> (Option<(String, Membership)>, Option<PeerProbe>) {
        let Some(f) = self.follow.as_ref() else {
            return (None, None);
        };
        let Some(i) = self.members.see(
            &mut self.tracked,
            cookie,
            rec.peer,
            &f.endpoints,
            f.grace,
            Instant::now(),
        ) else {
            return (None, None);
        };
        (
            Some(f.endpoints.of_member(i, rec.peer, f.grace)),
            f.prober.finding(rec.peer),
        )
    }

    /// The endpoint's sockets (the recorded fact) whose peer a rule may act on now: its peer
    /// probe reports it dead, or it has left (or is leaving) its endpoint's DNS set. No other
    /// socket is judged by DNS, so none is visited for it.
    fn peers_in_question(&self) -> Vec<Cookie> {
        let Some(f) = self.follow.as_ref() else {
            return Vec::new();
        };
        self.mirror
            .peers()
            .filter(|(peer, _)| {
                f.prober.dead(**peer).is_some()
                    || matches!(
                        f.endpoints.standing(**peer, f.grace),
                        Some((_, Membership::Leaving { .. } | Membership::Orphaned { .. }))
                    )
            })
            .flat_map(|(_, cookies)| cookies.iter().copied())
            .filter(|c| self.tracked.endpoint_of(*c).is_some())
            .collect()
    }
}
