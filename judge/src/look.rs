//! One socket's verdict: the probe's record nominates, the kernel's `tcp_info` confirms,
//! and a kill needs that on two looks in a row (`CONFIRM_AFTER` apart), so `lifeline
//! status` shows a socket as stalled before it is killed. The record's trouble outlives a
//! recovery (no callback per ACK), so a look that finds the socket well holds until a stall
//! is possible again (`stall.rs`).

use super::{
    Cookie, Judge, Membership, Mono, Read, Socket, TcpInfo, life, run,
    verdict::{self, Verdict},
};

/// Why a socket's `tcp_info` is wanted (or not) in this sweep.
struct Nomination {
    /// The verdict between looks: the record's, or the last look's while it holds.
    between: Verdict,
    /// The record says stalled and no earlier look holds.
    stall: bool,
    /// The record's RTOs continue a run of keepalive probes the last look saw unanswered,
    /// long enough for the silent rule's count (`run.rs`).
    run: bool,
    /// Idle (or healthy) long enough to be due a keepalive look.
    idle: bool,
}

impl Judge {
    fn nominate(&self, s: &Socket<'_>, now: Mono) -> Nomination {
        let from_record = verdict::from_record(s.rec, now, self.settings.stall);
        let st = self.sockets.get(s.cookie);
        let between = self.between(s.cookie, s.rec, now);
        let held = s
            .rec
            .trouble
            .is_some_and(|t| st.and_then(|st| st.held(t, now)).is_some());
        let run = st.is_some_and(|st| run::nominates(s.rec, st.probes_seen, self.idle.silent));
        Nomination {
            between,
            stall: !held && from_record == Verdict::Stalled,
            run: !held && run,
            idle: !s.polled
                && matches!(between, Verdict::Idle | Verdict::Healthy)
                && self.idle.due(st.and_then(|st| st.idle_due), s.rec, now),
        }
    }

    /// Whether the socket's `tcp_info` must be read this sweep: the record nominates it,
    /// or it is idle long enough to be due a keepalive look, or it is polled, or an
    /// endpoint rule is due (a dead peer's jitter has passed, an orphan's migration is due).
    pub fn wants_info(&mut self, s: &Socket<'_>, at: Mono) -> bool {
        let n = self.nominate(s, at);
        s.polled
            || n.stall
            || n.run
            || n.idle
            || s.member.is_some()
                && s.dead_peer()
                    .is_some_and(|d| at >= d.found + self.settings.dead_peer_delay(s.cookie))
            || self.migration_due(s, at)
            || self.settings.migrate && left(s)
            || self.unscheduled_member(s)
    }

    /// An endpoint's socket in the set with no look scheduled: read once, and its looks
    /// follow its keepalive cycle from then on (`EndpointCall::look_in`).
    fn unscheduled_member(&self, s: &Socket<'_>) -> bool {
        matches!(s.member, Some((_, Membership::InSet)))
            && self
                .sockets
                .get(s.cookie)
                .is_none_or(|st| st.idle_due.is_none())
    }

    fn migration_due(&mut self, s: &Socket<'_>, at: Mono) -> bool {
        if !(matches!(s.member, Some((_, Membership::Orphaned { .. }))) && self.settings.migrate) {
            return false;
        }
        let settings = &self.settings;
        let due = self.sockets.update(s.cookie, |st| {
            settings.migration_time(s.cookie, &mut st.migration, at)
        });
        at >= due
    }

    /// The verdict, with the kernel's `tcp_info` when it was read; `None`: the socket is gone.
    /// Without the kernel's view nothing is ever dead: a record alone only makes a suspect;
    /// and a socket silent across the path's return is dead only on evidence gathered after
    /// it (`path.rs`).
    pub(crate) fn verdict(
        &mut self,
        s: &Socket<'_>,
        read: Option<&Read>,
        at: Mono,
    ) -> Option<(Verdict, Option<TcpInfo>)> {
        let n = self.nominate(s, at);
        let info = match read {
            Some(Read::Gone) => return None,
            Some(Read::Info(i)) => Some(*i),
            Some(Read::NoInfo | Read::Unreadable) | None => None,
        };
        // The look's memory: made here, as the look's verdict is kept (`Tally::set`).
        let v = self.sockets.update(s.cookie, |st| {
            if let Some(i) = &info {
                st.probes_seen = Some(run::ProbesSeen {
                    probes: i.probes,
                    at,
                });
            }
            if !(s.polled || n.idle || n.stall || n.run) {
                if let Some(i) = &info {
                    self.idle.looked(s.cookie, &mut st.idle_due, i, at);
                } else {
                    self.idle.passed_over(s.cookie, &mut st.idle_due, s.rec, at);
                }
                return n.between;
            }
            let Some(i) = info else {
                self.idle.passed_over(s.cookie, &mut st.idle_due, s.rec, at);
                return Verdict::Suspect;
            };
            let kernel = verdict::from_info(&i, self.settings.stall, self.idle.silent);
            let kernel = self.path.fresh(&mut st.base, &i, life(&i, at), kernel);
            // Whatever the look was for, it says when silence is possible at the earliest.
            self.idle.looked(s.cookie, &mut st.idle_due, &i, at);
            // A run's nomination the kernel does not confirm holds nothing: the look has
            // just refreshed `probes_seen`, and the stall rule's own count must stay free.
            if let (Some(trouble), false, false) = (s.rec.trouble, s.polled, n.run && !n.stall) {
                self.stall.looked(&mut st.held, trouble, &i, kernel, at);
            }
            let v = match kernel {
                _ if s.polled => kernel,
                Verdict::Stalled if n.stall || n.run => Verdict::Stalled,
                Verdict::Silent | Verdict::Suspect if n.idle => kernel,
                _ if n.idle => n.between,
                // The record nominated a stall the kernel does not see: the kernel's word,
                // short of a kill (a silent verdict goes through the idle rules' own looks).
                k if k.is_dead() => Verdict::Suspect,
                k => k,
            };
            if v.is_dead() {
                st.dead_now = true;
            }
            v
        });
        Some((v, info))
    }

    /// A dead verdict confirmed by the previous look too (and with the kernel's view).
    #[must_use]
    pub(crate) fn confirmed(
        &self,
        cookie: Cookie,
        verdict: Verdict,
        info: Option<&TcpInfo>,
    ) -> bool {
        verdict.is_dead()
            && info.is_some()
            && self.sockets.get(cookie).is_some_and(|st| st.dead_before)
    }
}

/// An endpoint socket whose peer left its answers: read every time it is visited, so a
/// failed round trip of it is seen at once (`early.rs`). Only while a peer is out.
fn left(s: &Socket<'_>) -> bool {
    matches!(
        s.member,
        Some((_, Membership::Leaving { .. } | Membership::Orphaned { .. }))
    )
}
