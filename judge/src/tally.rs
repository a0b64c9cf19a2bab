//! The count per verdict of the watched sockets' last looks, kept as the sweeps go rather
//! than recounted over every socket: metrics and systemd's STATUS= read the counts after
//! every sweep. Each socket's own verdict is `SocketState::verdict`. The one verdict that
//! changes without news is healthy turning idle (`verdict::turns_idle_at`, the record's rule
//! as a moment); that moment is known when the socket is looked at, so it is queued (its
//! `SocketState::settle`, ordered by `settle`) and the socket visited again then.

use std::time::Duration;

use super::{
    Cookie, Record,
    due::DueIndex,
    socket::SocketState,
    verdict::{self, Verdict},
};

#[derive(Default)]
pub(crate) struct Tally {
    counts: [u64; Verdict::ALL.len()],
    /// Healthy sockets, due when their record turns idle.
    pub settle: DueIndex,
}

impl Tally {
    /// The verdict of a look at `cookie`, whose state is `st`.
    pub(crate) fn set(
        &mut self,
        cookie: Cookie,
        st: &mut SocketState,
        v: Verdict,
        rec: &Record,
        stall: Duration,
    ) {
        if let Some(old) = st.verdict.replace(v) {
            self.counts[old.index()] -= 1;
        }
        self.counts[v.index()] += 1;
        match verdict::turns_idle_at(rec, stall) {
            Some(t) if v == Verdict::Healthy => self.settle.set(cookie, &mut st.settle, t),
            _ => self.settle.remove(cookie, &mut st.settle),
        }
    }

    /// A forgotten socket leaves the counts and the queue.
    pub(crate) fn forget(&mut self, cookie: Cookie, st: &mut SocketState) {
        if let Some(old) = st.verdict.take() {
            self.counts[old.index()] -= 1;
        }
        self.settle.remove(cookie, &mut st.settle);
    }

    /// Sockets per verdict, every verdict listed.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (Verdict, u64)> + '_ {
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
        let (mut s1, mut s2) = (SocketState::default(), SocketState::default());
        t.set(one, &mut s1, Verdict::Healthy, &rec, stall.after);
        t.set(two, &mut s2, Verdict::Healthy, &rec, stall.after);
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
        t.set(one, &mut s1, Verdict::Idle, &rec, stall.after);
        t.forget(two, &mut s2);
        let counts: Vec<_> = t.counts().filter(|(_, n)| *n > 0).collect();
        assert_eq!(counts, [(Verdict::Idle, 1)]);
        assert_eq!(t.settle.len(), 0);
        assert_eq!(s1.verdict, Some(Verdict::Idle));
    }
}
