//! Sockets due for attention at a point in time, earliest first: what lets a sweep touch only
//! the sockets something is due for, instead of asking every watched socket whether it is.
//!
//! The index only orders. Each socket's due time lives in its own state (`socket.rs`, one
//! slot per schedule), and every change goes through the slot and the index together, so the
//! two cannot disagree; forgetting a socket takes its slots out of the index (`Judge::forget`).
//! The index stays node-wide because "who is due first" is a question about all sockets.

use std::collections::BTreeSet;

use super::{Cookie, Mono};

#[derive(Debug, Default)]
pub(crate) struct DueIndex {
    /// (due time, cookie), ordered.
    order: BTreeSet<(Mono, Cookie)>,
}

impl DueIndex {
    /// `cookie`, whose slot is `slot`, is due at `t` (replacing any earlier or later time).
    pub(crate) fn set(&mut self, cookie: Cookie, slot: &mut Option<Mono>, t: Mono) {
        if let Some(old) = slot.replace(t) {
            self.order.remove(&(old, cookie));
        }
        self.order.insert((t, cookie));
    }

    /// Due at `t`, or at the time already set if that is earlier.
    pub(crate) fn set_earlier(&mut self, cookie: Cookie, slot: &mut Option<Mono>, t: Mono) {
        if slot.is_none_or(|old| t < old) {
            self.set(cookie, slot, t);
        }
    }

    pub(crate) fn remove(&mut self, cookie: Cookie, slot: &mut Option<Mono>) {
        if let Some(old) = slot.take() {
            self.order.remove(&(old, cookie));
        }
    }

    /// Every cookie due at `now` or before, earliest first; they stay queued until
    /// rescheduled or removed.
    pub(crate) fn due(&self, now: Mono) -> impl Iterator<Item = Cookie> + '_ {
        self.order
            .range(..=(now, Cookie(u64::MAX)))
            .map(|(_, c)| *c)
    }

    /// The earliest due time.
    #[must_use]
    pub(crate) fn first(&self) -> Option<Mono> {
        self.order.first().map(|(t, _)| *t)
    }

    #[cfg(test)]
    #[must_use]
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn earliest_first_one_time_per_cookie() {
        let mut q = DueIndex::default();
        let mut slots: BTreeMap<u64, Option<Mono>> = (1..=3).map(|c| (c, None)).collect();
        let mut set = |q: &mut DueIndex, c: u64, ns: u64| {
            q.set(Cookie(c), slots.get_mut(&c).unwrap(), Mono::from_nanos(ns));
        };
        set(&mut q, 1, 30);
        set(&mut q, 2, 10);
        set(&mut q, 3, 20);
        set(&mut q, 1, 5);
        assert_eq!(
            q.due(Mono::from_nanos(15)).collect::<Vec<_>>(),
            [Cookie(1), Cookie(2)]
        );
        assert_eq!(q.first(), Some(Mono::from_nanos(5)));
        let mut two = Some(Mono::from_nanos(10));
        q.set_earlier(Cookie(2), &mut two, Mono::from_nanos(50));
        assert_eq!(
            two,
            Some(Mono::from_nanos(10)),
            "a later time does not postpone"
        );
        let mut three = Some(Mono::from_nanos(20));
        q.set_earlier(Cookie(3), &mut three, Mono::from_nanos(1));
        assert_eq!(q.due(Mono::from_nanos(1)).collect::<Vec<_>>(), [Cookie(3)]);
        q.remove(Cookie(3), &mut three);
        let mut one = Some(Mono::from_nanos(5));
        q.remove(Cookie(1), &mut one);
        assert_eq!(q.due(Mono::MAX).collect::<Vec<_>>(), [Cookie(2)]);
        assert_eq!(q.len(), 1);
        assert_eq!((one, three), (None, None));
    }
}
