//! Sockets due for attention at a point in time, earliest first: what lets a sweep touch only
//! the sockets something is due for, instead of asking every watched socket whether it is.
//! Each cookie has at most one due time; setting another replaces it.

use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Default)]
pub(crate) struct DueQueue {
    /// (due time in `CLOCK_MONOTONIC` ns, cookie), ordered.
    order: BTreeSet<(u64, u64)>,
    at: HashMap<u64, u64>,
}

impl DueQueue {
    /// Due at `t` (replacing any earlier or later time).
    pub fn set(&mut self, cookie: u64, t: u64) {
        if let Some(old) = self.at.insert(cookie, t) {
            self.order.remove(&(old, cookie));
        }
        self.order.insert((t, cookie));
    }

    /// Due at `t`, or at the time already set if that is earlier.
    pub fn set_earlier(&mut self, cookie: u64, t: u64) {
        if self.at.get(&cookie).is_none_or(|old| t < *old) {
            self.set(cookie, t);
        }
    }

    pub fn remove(&mut self, cookie: u64) {
        if let Some(old) = self.at.remove(&cookie) {
            self.order.remove(&(old, cookie));
        }
    }

    #[must_use]
    pub fn get(&self, cookie: u64) -> Option<u64> {
        self.at.get(&cookie).copied()
    }

    /// Every cookie due at `now` or before, earliest first; they stay queued until
    /// rescheduled or removed.
    pub fn due(&self, now: u64) -> impl Iterator<Item = u64> + '_ {
        self.order.range(..=(now, u64::MAX)).map(|(_, c)| *c)
    }

    /// The earliest due time.
    #[must_use]
    pub fn first(&self) -> Option<u64> {
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
        q.set(1, 30);
        q.set(2, 10);
        q.set(3, 20);
        q.set(1, 5);
        assert_eq!(q.due(15).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(q.first(), Some(5));
        q.set_earlier(2, 50);
        assert_eq!(q.get(2), Some(10), "a later time does not postpone");
        q.set_earlier(3, 1);
        assert_eq!(q.due(1).collect::<Vec<_>>(), [3]);
        q.remove(3);
        q.remove(1);
        assert_eq!(q.due(u64::MAX).collect::<Vec<_>>(), [2]);
        assert_eq!(q.len(), 1);
    }
}
