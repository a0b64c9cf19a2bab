//! Sockets due for attention at a point in time, earliest first: what lets a sweep touch only
//! the sockets something is due for, instead of asking every watched socket whether it is.
//! Each cookie has at most one due time; setting another replaces it.

use std::collections::{BTreeSet, HashMap};

use super::{Cookie, Mono};

#[derive(Debug, Default)]
pub(crate) struct DueQueue {
    /// (due time, cookie), ordered.
    order: BTreeSet<(Mono, Cookie)>,
    at: HashMap<Cookie, Mono>,
}

impl DueQueue {
    /// Due at `t` (replacing any earlier or later time).
    pub fn set(&mut self, cookie: Cookie, t: Mono) {
        if let Some(old) = self.at.insert(cookie, t) {
            self.order.remove(&(old, cookie));
        }
        self.order.insert((t, cookie));
    }

    /// Due at `t`, or at the time already set if that is earlier.
    pub fn set_earlier(&mut self, cookie: Cookie, t: Mono) {
        if self.at.get(&cookie).is_none_or(|old| t < *old) {
            self.set(cookie, t);
        }
    }

    pub fn remove(&mut self, cookie: Cookie) {
        if let Some(old) = self.at.remove(&cookie) {
            self.order.remove(&(old, cookie));
        }
    }

    #[must_use]
    pub fn get(&self, cookie: Cookie) -> Option<Mono> {
        self.at.get(&cookie).copied()
    }

    /// Every cookie due at `now` or before, earliest first; they stay queued until
    /// rescheduled or removed.
    pub fn due(&self, now: Mono) -> impl Iterator<Item = Cookie> + '_ {
        self.order
            .range(..=(now, Cookie(u64::MAX)))
            .map(|(_, c)| *c)
    }

    /// The earliest due time.
    #[must_use]
    pub fn first(&self) -> Option<Mono> {
        self.order.first().map(|(t, _)| *t)
    }

    #[cfg(test)]
    #[must_use]
    pub fn len(&self) -> usize {
        self.at.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_one_time_per_cookie() {
        let mut q = DueQueue::default();
        q.set(Cookie(1), Mono::from_nanos(30));
        q.set(Cookie(2), Mono::from_nanos(10));
        q.set(Cookie(3), Mono::from_nanos(20));
        q.set(Cookie(1), Mono::from_nanos(5));
        assert_eq!(
            q.due(Mono::from_nanos(15)).collect::<Vec<_>>(),
            [Cookie(1), Cookie(2)]
        );
        assert_eq!(q.first(), Some(Mono::from_nanos(5)));
        q.set_earlier(Cookie(2), Mono::from_nanos(50));
        assert_eq!(
            q.get(Cookie(2)),
            Some(Mono::from_nanos(10)),
            "a later time does not postpone"
        );
        q.set_earlier(Cookie(3), Mono::from_nanos(1));
        assert_eq!(q.due(Mono::from_nanos(1)).collect::<Vec<_>>(), [Cookie(3)]);
        q.remove(Cookie(3));
        q.remove(Cookie(1));
        assert_eq!(q.due(Mono::MAX).collect::<Vec<_>>(), [Cookie(2)]);
        assert_eq!(q.len(), 1);
    }
}
