//! Each watched socket's verdict from its last look, and the count per verdict, kept as the
//! sweeps go rather than recounted over every socket: metrics and systemd's STATUS= read the
//! counts after every sweep. The one verdict that changes without news is healthy turning
//! idle (`verdict::turns_idle_at`, the record's rule as a moment); that moment is known when
//! the socket is looked at, so it is queued (`settle`) and the socket visited again then.

use std::{collections::HashMap, time::Duration};

use super::{
    Cookie, Record,
    due::DueQueue,
    verdict::{self, Verdict},
};

#[derive(Default)]
pub(crate) struct Tally {
    verdicts: HashMap<Cookie, Verdict>,
    counts: [u64; Verdict::ALL.len()],
    /// Healthy sockets, due when their record turns idle.
    pub settle: DueQueue,
}

impl Tally {
    /// The verdict of a look.
    pub fn set(&mut self, cookie: Cookie, v: Verdict, rec: &Record, stall: Duration) {
        if let Some(old) = self.verdicts.insert(cookie, v) {
            self.counts[old.index()] -= 1;
        }
        self.counts[v.index()] += 1;
        match verdict::turns_idle_at(rec, stall) {
            Some(t) if v == Verdict::Healthy => self.settle.set(cookie, t),
            _ => self.settle.remove(cookie),
        }
    }

    pub fn remove(&mut self, cookie: Cookie) {
        if let Some(old) = self.verdicts.remove(&cookie) {
            self.counts[old.index()] -= 1;
        }
        self.settle.remove(cookie);
    }

    #[must_use]
    pub fn get(&self, cookie: Cookie) -> Option<Verdict> {
        self.verdicts.get(&cookie).copied()
    }

    /// Sockets per verdict, every verdict listed.
    pub fn counts(&self) -> impl Iterator<Item = (Verdict, u64)> + '_ {
        Verdict::ALL
            .into_iter()
            .map(|v| (v, self.counts[v.index()]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mono, TcpState};

    #[test]
    fn counts_follow_changes_and_healthy_is_queued_to_settle() {
        let mut t = Tally::default();
        let rec = Record {
            state: TcpState::Established,
            last_ack: Mono::from_secs(100),
            ..Record::default()
        };
        let stall = crate::Stall::new(Duration::from_secs(10), 8);
        let (one, two) = (Cookie(1), Cookie(2));
        t.set(one, Verdict::Healthy, &rec, stall.after);
        t.set(two, Verdict::Healthy, &rec, stall.after);
        let at = Mono::from_secs(110);
        assert_eq!(t.settle.due(at).collect::<Vec<_>>(), [one, two]);
        assert_eq!(
            verdict::from_record(&rec, at, stall),
            Verdict::Idle,
            "due exactly when the record's rule says idle"
        );
        assert_eq!(
            verdict::from_record(&rec, Mono::from_nanos(at.as_nanos() - 1), stall),
            Verdict::Healthy
        );
        t.set(one, Verdict::Idle, &rec, stall.after);
        t.remove(two);
        let counts: Vec<_> = t.counts().filter(|(_, n)| *n > 0).collect();
        assert_eq!(counts, [(Verdict::Idle, 1)]);
        assert_eq!(t.settle.len(), 0);
        assert_eq!(t.get(one), Some(Verdict::Idle));
    }
}
