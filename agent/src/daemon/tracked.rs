//! The loop's own memory of a socket, in one table: one `Tracked` per cookie (a `BTreeMap`:
//! the same order on every run), so forgetting a socket (`Daemon::gone`) is one remove here,
//! beside the judge's own one remove (`Judge::forget`), the endpoint membership included
//! (`endpoint::Facts`: the endpoint stage decides it, the fact is kept here). The probe's
//! record stays the kernel stage's mirror (`kernel::mirror`). The counts of open
//! fast phases and of deferred sockets are derived (kept with every change here), and the
//! polled sockets are a set of their own, so a sweep asks "any open?" or "which are polled?" without a pass over
//! the table; only the fast passes and the once-a-second deferral poll walk it, and only
//! while something is open.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use lifeline_common::Keepalive;

use crate::{
    endpoint::Facts,
    judge::{Cookie, Mono, defer::App},
};

/// What the loop remembers about one socket.
#[derive(Debug, Default)]
pub(super) struct Tracked {
    /// Its state could not be read, and that was reported (once per socket).
    pub unreadable_told: bool,
    /// Its fast keepalive phase, open since (as the agent learned of it, `fast.rs`).
    pub fast_since: Option<Mono>,
    /// Deferred while lifeline only observes (`defer.rs`): lifeline's values to bring back,
    /// and the application's view.
    pub deferred: Option<(Keepalive, App)>,
    /// The endpoint (index) it is the connection of (`endpoint::Members` decides).
    pub endpoint: Option<usize>,
}

/// Replace `slot` with `new`, keeping `count` the number of filled slots of its kind.
fn swap<T>(count: &mut usize, slot: &mut Option<T>, new: Option<T>) -> Option<T> {
    let filled = new.is_some();
    let old = std::mem::replace(slot, new);
    match (old.is_some(), filled) {
        (false, true) => *count += 1,
        (true, false) => *count -= 1,
        _ => {}
    }
    old
}

#[derive(Debug, Default)]
pub(super) struct Table {
    sockets: BTreeMap<Cookie, Tracked>,
    /// How many sockets have `fast_since`.
    fast_open: usize,
    /// How many sockets have `deferred`.
    deferred: usize,
    /// The polled sockets (pre-existing and not armed by the probe: judged from `tcp_info`
    /// alone): every sweep visits them, and must not pass over the whole table to find
    /// them. `poll` adds, `forget` removes.
    polled: BTreeSet<Cookie>,
}

impl Table {
    /// Sockets found polled when the watch began (`Parts::polled`).
    pub(super) fn with_polled(polled: &HashSet<Cookie>) -> Self {
        let mut t = Self::default();
        t.poll(polled.iter().copied());
        t
    }

    /// These sockets are polled (adopted without the probe's callbacks).
    pub(super) fn poll(&mut self, cookies: impl IntoIterator<Item = Cookie>) {
        self.polled.extend(cookies);
    }

    #[must_use]
    pub(super) fn is_polled(&self, cookie: Cookie) -> bool {
        self.polled.contains(&cookie)
    }

    /// The polled sockets, in cookie order.
    pub(super) fn polled(&self) -> impl Iterator<Item = Cookie> + '_ {
        self.polled.iter().copied()
    }

    /// Whether the socket's unreadable state is to be reported: the first time only.
    pub(super) fn tell_unreadable(&mut self, cookie: Cookie) -> bool {
        let t = self.sockets.entry(cookie).or_default();
        !std::mem::replace(&mut t.unreadable_told, true)
    }

    /// The kernel opened `cookie`'s fast phase at `at` (kept from the first news of it).
    /// Returns whether no phase was open before.
    pub(super) fn open_fast(&mut self, cookie: Cookie, at: Mono) -> bool {
        let first = self.fast_open == 0;
        let t = self.sockets.entry(cookie).or_default();
        if t.fast_since.is_none() {
            swap(&mut self.fast_open, &mut t.fast_since, Some(at));
        }
        first
    }

    /// The socket's fast phase is over.
    pub(super) fn close_fast(&mut self, cookie: Cookie) {
        if let Some(t) = self.sockets.get_mut(&cookie) {
            swap(&mut self.fast_open, &mut t.fast_since, None);
        }
    }

    /// Whether `cookie`'s fast phase is open.
    #[must_use]
    pub(super) fn is_fast(&self, cookie: Cookie) -> bool {
        self.sockets
            .get(&cookie)
            .is_some_and(|t| t.fast_since.is_some())
    }

    /// Whether any fast phase is open.
    #[must_use]
    pub(super) fn any_fast(&self) -> bool {
        self.fast_open > 0
    }

    /// The open fast phases and since when, in cookie order.
    pub(super) fn fast_phases(&self) -> Vec<(Cookie, Mono)> {
        self.sockets
            .iter()
            .filter_map(|(c, t)| t.fast_since.map(|s| (*c, s)))
            .collect()
    }

    /// The socket's deferral, if it is deferred.
    #[must_use]
    pub(super) fn deferred(&self, cookie: Cookie) -> Option<(Keepalive, App)> {
        self.sockets.get(&cookie).and_then(|t| t.deferred)
    }

    /// The socket is deferred: lifeline's values to bring back, the application's view.
    pub(super) fn defer(&mut self, cookie: Cookie, deferral: (Keepalive, App)) {
        let t = self.sockets.entry(cookie).or_default();
        swap(&mut self.deferred, &mut t.deferred, Some(deferral));
    }

    /// The socket is no longer deferred; its deferral, if it was.
    pub(super) fn undefer(&mut self, cookie: Cookie) -> Option<(Keepalive, App)> {
        let t = self.sockets.get_mut(&cookie)?;
        swap(&mut self.deferred, &mut t.deferred, None)
    }

    /// How many sockets are deferred.
    #[must_use]
    pub(super) fn deferred_count(&self) -> usize {
        self.deferred
    }

    /// The deferred sockets, in cookie order.
    pub(super) fn deferred_cookies(&self) -> Vec<Cookie> {
        self.sockets
            .iter()
            .filter(|(_, t)| t.deferred.is_some())
            .map(|(c, _)| *c)
            .collect()
    }

    /// The endpoint (index) `cookie` is the connection of, as recorded.
    #[must_use]
    pub(super) fn endpoint_of(&self, cookie: Cookie) -> Option<usize> {
        self.sockets.get(&cookie).and_then(|t| t.endpoint)
    }

    /// Everything the loop kept about a socket that is gone.
    pub(super) fn forget(&mut self, cookie: Cookie) {
        self.polled.remove(&cookie);
        if let Some(mut t) = self.sockets.remove(&cookie) {
            swap(&mut self.fast_open, &mut t.fast_since, None);
            swap(&mut self.deferred, &mut t.deferred, None);
        }
    }
}

impl Facts for Table {
    fn endpoint_of(&self, cookie: Cookie) -> Option<usize> {
        Table::endpoint_of(self, cookie)
    }

    fn record(&mut self, cookie: Cookie, i: usize) -> bool {
        self.sockets
            .entry(cookie)
            .or_default()
            .endpoint
            .replace(i)
            .is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_remove_forgets_the_poll_and_the_report() {
        let mut t = Table::with_polled(&HashSet::from([Cookie(3)]));
        t.poll([Cookie(1)]);
        assert!(t.tell_unreadable(Cookie(2)));
        assert!(!t.tell_unreadable(Cookie(2)), "said once");
        assert_eq!(t.polled().collect::<Vec<_>>(), [Cookie(1), Cookie(3)]);
        t.forget(Cookie(2));
        t.forget(Cookie(3));
        assert!(
            t.tell_unreadable(Cookie(2)),
            "a new socket with the cookie: said again"
        );
        assert!(!t.is_polled(Cookie(3)));
        assert!(t.is_polled(Cookie(1)));
        let at = Mono::from_secs(5);
        assert!(t.open_fast(Cookie(1), at), "the first phase");
        assert!(!t.open_fast(Cookie(9), at));
        assert!(
            !t.open_fast(Cookie(9), Mono::from_secs(6)),
            "kept from the first news"
        );
        assert_eq!(t.fast_phases(), [(Cookie(1), at), (Cookie(9), at)]);
        t.close_fast(Cookie(1));
        t.forget(Cookie(9));
        assert!(!t.any_fast());
    }

    #[test]
    fn the_deferred_count_follows_defer_undefer_and_forget() {
        let mut t = Table::default();
        let app = App {
            keepalive: crate::judge::defer::AppKeepalive::Off,
            user_timeout_ms: None,
            user_timeout_changed: false,
        };
        let d = (Keepalive::default(), app);
        t.defer(Cookie(1), d);
        t.defer(Cookie(1), d);
        t.defer(Cookie(2), d);
        assert_eq!(t.deferred_count(), 2, "once per socket");
        assert_eq!(t.deferred_cookies(), [Cookie(1), Cookie(2)]);
        assert!(t.undefer(Cookie(1)).is_some());
        assert!(t.undefer(Cookie(1)).is_none());
        t.forget(Cookie(2));
        assert_eq!(t.deferred_count(), 0);
        assert!(t.undefer(Cookie(3)).is_none(), "never tracked");
    }
}
