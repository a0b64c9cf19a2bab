//! The loop's own memory of a socket, in one table: one `Tracked` per cookie (a `BTreeMap`:
//! the same order on every run), so forgetting a socket (`Daemon::gone`) is one remove here,
//! beside the judge's own one remove (`Judge::forget`). What other stages keep about a socket
//! stays theirs and is forgotten through their own call in `gone`: the probe's record
//! (`kernel::mirror`), the endpoint membership (`endpoint::Members`), the fast probes' phase
//! (`fast.rs`) and the deferral (`defer.rs`).

use std::collections::{BTreeMap, HashSet};

use crate::judge::Cookie;

/// What the loop remembers about one socket.
#[derive(Debug, Default)]
pub(super) struct Tracked {
    /// Pre-existing and not armed by the probe: judged from `tcp_info` alone, visited in
    /// every sweep.
    pub polled: bool,
    /// Its state could not be read, and that was reported (once per socket).
    pub unreadable_told: bool,
}

#[derive(Debug, Default)]
pub(super) struct Table {
    sockets: BTreeMap<Cookie, Tracked>,
}

impl Table {
    /// Sockets found polled when the watch began (`Parts::polled`).
    pub fn with_polled(polled: &HashSet<Cookie>) -> Self {
        let mut t = Self::default();
        t.poll(polled.iter().copied());
        t
    }

    /// These sockets are polled (adopted without the probe's callbacks).
    pub fn poll(&mut self, cookies: impl IntoIterator<Item = Cookie>) {
        for c in cookies {
            self.sockets.entry(c).or_default().polled = true;
        }
    }

    #[must_use]
    pub fn is_polled(&self, cookie: Cookie) -> bool {
        self.sockets.get(&cookie).is_some_and(|t| t.polled)
    }

    /// The polled sockets, in cookie order.
    pub fn polled(&self) -> impl Iterator<Item = Cookie> + '_ {
        self.sockets
            .iter()
            .filter(|(_, t)| t.polled)
            .map(|(c, _)| *c)
    }

    /// Whether the socket's unreadable state is to be reported: the first time only.
    pub fn tell_unreadable(&mut self, cookie: Cookie) -> bool {
        let t = self.sockets.entry(cookie).or_default();
        !std::mem::replace(&mut t.unreadable_told, true)
    }

    /// Everything the loop kept about a socket that is gone.
    pub fn forget(&mut self, cookie: Cookie) {
        self.sockets.remove(&cookie);
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
    }
}
