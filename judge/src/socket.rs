//! One socket's state in the judge, in one place: every rule's memory of a socket is a field
//! here, and the judge keeps one `SocketState` per cookie (`Sockets`, a `BTreeMap`: the same
//! order on every run). Forgetting a socket is one `remove` (`Judge::forget`), so no
//! rule's memory of a socket can outlive the others': stale state in one of several maps is
//! how a peer probe's `dead` once outlived the peer's recovery and killed healthy re-dials.
//!
//! What stays node-wide (`Judge`): what is about all sockets or none: the kill budgets and the
//! kill count (`gate.rs`), the escalation's tickets (a kill's watch outlives its socket until
//! it ends, `escalate.rs`), the counts per verdict (`tally.rs`), the path's state (`path.rs`)
//! and the ordering indexes of the two schedules (`due.rs`), whose times are slots here.
//!
//! A sweep must not cost a pass over every socket (100,000 of them at the scale the status
//! table is built for), so the table keeps one index beside the states: the sockets a rule
//! has business with whatever the news (`SocketState::pending`) or found dead in this sweep.
//! It is derived, never written by a rule: every change to a state goes through
//! `Sockets::update`, which files the socket again, and `remove` takes it out.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use super::{Cookie, Mono, Verdict, path::Base, run::ProbesSeen, stall::Held};

/// Everything the judge remembers about one socket. A field is `None` (or false) when its
/// rule has nothing pending; an entry with every field empty is a socket looked at and
/// found with nothing to remember but its verdict.
#[derive(Debug, Default)]
pub(crate) struct SocketState {
    /// Dead (stalled or silent) at the previous sweep's look: a kill needs two in a row.
    pub dead_before: bool,
    /// Dead at this sweep's look; becomes `dead_before` at the sweep's end.
    pub dead_now: bool,
    /// When this orphan is due to migrate (`endpoint.rs`), fixed at first sight.
    pub migration: Option<Mono>,
    /// When this socket, whose peer left and whose round trip failed, migrates (`early.rs`).
    pub early: Option<Mono>,
    /// Reported once as an orphan under `--on-orphan log`.
    pub orphan_logged: bool,
    /// When the idle rules next want a look (indexed by `IdleWatch`).
    pub idle_due: Option<Mono>,
    /// When its healthy record turns idle (indexed by `Tally`).
    pub settle: Option<Mono>,
    /// The kernel's answer for its trouble episode while it holds (`stall.rs`).
    pub held: Option<Held>,
    /// The verdict of its last look (counted by `Tally`).
    pub verdict: Option<Verdict>,
    /// Backing off after an attempt that did not end it: until when, and the pause.
    pub backoff: Option<(Mono, Duration)>,
    /// Silent across the path's last return: its counts then (`path.rs`).
    pub base: Option<Base>,
    /// The unanswered keepalive probes its last look saw (`tcpi_probes`), and when: a
    /// trouble episode after them continues their run (`run.rs`).
    pub probes_seen: Option<ProbesSeen>,
}

impl SocketState {
    /// Whether a rule has business with the socket whatever the news: a dead verdict awaiting
    /// its confirming look, a migration due, a kill backing off (`Judge::due`).
    #[must_use]
    pub(crate) fn pending(&self) -> bool {
        self.dead_before
            || self.migration.is_some()
            || self.early.is_some()
            || self.backoff.is_some()
    }

    /// Whether the table's index must list it: pending, or dead at this sweep's look (the
    /// sweep's end turns that into `dead_before`).
    fn marked(&self) -> bool {
        self.pending() || self.dead_now
    }

    /// The verdict the last look's kernel answer holds for `trouble`'s episode at `now`.
    #[must_use]
    pub(crate) fn held(&self, trouble: Mono, now: Mono) -> Option<Verdict> {
        self.held.and_then(|h| h.holds(trouble, now))
    }

    /// Whether it was backing off at `at`.
    #[must_use]
    pub(crate) fn quiet(&self, at: Mono) -> bool {
        self.backoff.is_some_and(|(until, _)| at < until)
    }
}

/// The judge's per-socket table: the states by cookie, and the index of the marked ones.
#[derive(Debug, Default)]
pub(crate) struct Sockets {
    states: BTreeMap<Cookie, SocketState>,
    /// Exactly the cookies whose state is `marked`.
    marked: BTreeSet<Cookie>,
}

impl Sockets {
    #[must_use]
    pub(crate) fn get(&self, cookie: Cookie) -> Option<&SocketState> {
        self.states.get(&cookie)
    }

    /// Change `cookie`'s state (made empty if it had none), and file it again.
    pub(crate) fn update<R>(&mut self, cookie: Cookie, f: impl FnOnce(&mut SocketState) -> R) -> R {
        let st = self.states.entry(cookie).or_default();
        let r = f(st);
        if st.marked() {
            self.marked.insert(cookie);
        } else {
            self.marked.remove(&cookie);
        }
        r
    }

    /// Everything kept about `cookie`, taken out in one.
    pub(crate) fn remove(&mut self, cookie: Cookie) -> Option<SocketState> {
        self.marked.remove(&cookie);
        self.states.remove(&cookie)
    }

    /// The sockets a rule has business with whatever the news.
    pub(crate) fn pending(&self) -> impl Iterator<Item = Cookie> + '_ {
        self.marked
            .iter()
            .copied()
            .filter(|c| self.states.get(c).is_some_and(SocketState::pending))
    }

    /// Change every marked socket (the only ones with a look's dead verdict, a migration or
    /// a backoff to change).
    pub(crate) fn update_marked(&mut self, mut f: impl FnMut(&mut SocketState)) {
        let marked: Vec<Cookie> = self.marked.iter().copied().collect();
        for c in marked {
            self.update(c, &mut f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_follows_every_update_and_remove() {
        let mut t = Sockets::default();
        t.update(Cookie(1), |st| st.dead_now = true);
        t.update(Cookie(2), |st| st.verdict = Some(Verdict::Healthy));
        t.update(Cookie(3), |st| st.migration = Some(Mono::from_secs(1)));
        assert_eq!(
            t.pending().collect::<Vec<_>>(),
            [Cookie(3)],
            "dead now: not yet"
        );
        t.update_marked(|st| st.dead_before = std::mem::take(&mut st.dead_now));
        assert_eq!(t.pending().collect::<Vec<_>>(), [Cookie(1), Cookie(3)]);
        t.update(Cookie(3), |st| st.migration = None);
        assert!(t.remove(Cookie(1)).is_some_and(|st| st.dead_before));
        assert_eq!(t.pending().count(), 0);
        assert_eq!(t.marked.len(), 0);
        assert!(t.get(Cookie(2)).is_some());
    }
}
