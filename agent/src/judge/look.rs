//! One socket's verdict: the probe's record nominates, the kernel's `tcp_info` confirms,
//! and a kill needs that on two looks in a row (`CONFIRM_AFTER` apart), so `lifeline
//! status` shows a socket as stalled before it is killed.

use std::time::Instant;

use super::{
    Judge, Read, Socket,
    verdict::{self, Verdict},
};
use crate::{diag::TcpInfo, endpoint::Membership};

impl Judge {
    /// Whether the socket's `tcp_info` must be read this sweep: the record nominates it,
    /// or it is idle long enough to be due a keepalive look, or it is polled, or an
    /// endpoint rule is due (a dead peer's jitter has passed, an orphan's migration is due).
    pub fn wants_info(&mut self, s: &Socket<'_>, now_ns: u64, at: Instant) -> bool {
        let from_record = verdict::from_record(s.rec, now_ns, self.settings.stall);
        s.polled
            || from_record == Verdict::Stalled
            || self.idle_due(s, from_record, now_ns)
            || s.dead_since
                .is_some_and(|t| at >= t + super::endpoint::dead_peer_delay(s.cookie))
            || self.migration_due(s, at)
    }

    fn idle_due(&self, s: &Socket<'_>, from_record: Verdict, now_ns: u64) -> bool {
        !s.polled
            && matches!(from_record, Verdict::Idle | Verdict::Healthy)
            && self.idle.due(s.cookie, s.rec, now_ns)
    }

    fn migration_due(&mut self, s: &Socket<'_>, at: Instant) -> bool {
        matches!(s.member, Some((_, Membership::Orphaned { .. })))
            && self.settings.migrate
            && at >= self.migration_time(s.cookie, at)
    }

    /// The verdict, with the kernel's `tcp_info` when it was read; `None`: the socket is gone.
    /// Without the kernel's view nothing is ever dead: a record alone only makes a suspect.
    pub fn verdict(
        &mut self,
        s: &Socket<'_>,
        read: Option<&Read>,
        now_ns: u64,
    ) -> Option<(Verdict, Option<TcpInfo>)> {
        let from_record = verdict::from_record(s.rec, now_ns, self.settings.stall);
        let idle_due = self.idle_due(s, from_record, now_ns);
        let nominated = s.polled || idle_due || from_record == Verdict::Stalled;
        let info = match read {
            Some(Read::Gone) => return None,
            Some(Read::Info(i)) => Some(*i),
            Some(Read::NoInfo | Read::Unreadable) | None => None,
        };
        if !nominated {
            return Some((from_record, info));
        }
        let Some(i) = info else {
            return Some((Verdict::Suspect, None));
        };
        if s.polled || idle_due {
            self.idle.looked(s.cookie, &i, now_ns);
        }
        let kernel = verdict::from_info(&i, self.settings.stall, self.idle.silent);
        let v = match kernel {
            _ if s.polled => kernel,
            Verdict::Stalled if from_record == Verdict::Stalled => Verdict::Stalled,
            Verdict::Silent | Verdict::Suspect if idle_due => kernel,
            _ if idle_due => from_record,
            _ => Verdict::Suspect,
        };
        if v.is_dead() {
            self.dead_now.insert(s.cookie);
        }
        Some((v, info))
    }

    /// A dead verdict confirmed by the previous look too (and with the kernel's view).
    #[must_use]
    pub fn confirmed(&self, cookie: u64, verdict: Verdict, info: Option<&TcpInfo>) -> bool {
        verdict.is_dead() && info.is_some() && self.seen_dead.contains(&cookie)
    }
}
