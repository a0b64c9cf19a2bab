//! One socket's state in the judge, in one place: every rule's memory of a socket is a field
//! here, and the judge keeps one `SocketState` per cookie (`Judge::sockets`, a `BTreeMap`:
//! the same order on every run). Forgetting a socket is one `remove` (`Judge::forget`), so no
//! rule's memory of a socket can outlive the others': stale state in one of several maps is
//! how a peer probe's `dead` once outlived the peer's recovery and killed healthy re-dials.
//!
//! What stays node-wide (`Judge`): what is about all sockets or none: the kill budgets and the
//! kill count (`gate.rs`), the escalation's tickets (a kill's watch outlives its socket until
//! it ends, `escalate.rs`), the counts per verdict (`tally.rs`), the path's state (`path.rs`)
//! and the ordering indexes of the two schedules (`due.rs`), whose times are slots here.

use std::time::Duration;

use super::{Mono, Verdict, path::Base, stall::Held};

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
}

impl SocketState {
    /// Whether a rule has business with the socket whatever the news: a dead verdict awaiting
    /// its confirming look, a migration due, a kill backing off (`Judge::due`).
    #[must_use]
    pub fn pending(&self) -> bool {
        self.dead_before
            || self.migration.is_some()
            || self.early.is_some()
            || self.backoff.is_some()
    }

    /// The verdict the last look's kernel answer holds for `trouble`'s episode at `now`.
    #[must_use]
    pub fn held(&self, trouble: Mono, now: Mono) -> Option<Verdict> {
        self.held.and_then(|h| h.holds(trouble, now))
    }

    /// Whether it was backing off at `at`.
    #[must_use]
    pub fn quiet(&self, at: Mono) -> bool {
        self.backoff.is_some_and(|(until, _)| at < until)
    }
}
