//! The rest of the judge's surface: news the loop passes on between looks (a record appeared
//! or changed, the kernel reports keepalive probes unanswered), and what status, metrics and
//! the loop ask of it (the rules in force, the counts, the verdict shown for a socket).

use lifeline_common::Keepalive;

use super::{Cookie, Judge, Mono, Record, Silence, Stall, Verdict};

impl Judge {
    /// Whether the probe reports unanswered keepalive probes as news: then a healthy idle
    /// socket is looked at only when it does; without it, on a schedule.
    pub fn set_unanswered_news(&mut self, notified: bool) {
        self.idle.notified = notified;
    }

    /// A record appeared or changed (its first keepalive look is scheduled from it).
    pub fn recorded(&mut self, cookie: Cookie, rec: &Record) {
        if self.idle.schedules(rec) {
            self.sockets.update(cookie, |st| {
                self.idle.recorded(cookie, &mut st.idle_due, rec);
            });
        }
    }

    /// The kernel reports `probes_out` keepalive probes of `cookie` unanswered. Returns
    /// whether the socket is worth a look now (its record read, its `tcp_info` read).
    ///
    /// From the threshold on (`reported_from`) it is: the silent rule may hold. The first
    /// unanswered probe is news too (the first sign of trouble), and on a healthy node it is
    /// most often a probe or answer lost once, answered at the next probe: there the
    /// kernel's word is the evidence, kept as what a look would have seen
    /// (`SocketState::probes_seen`: a heartbeat written after it earns the run's refresh
    /// look, `run.rs`), and no read is made. Past the threshold the kernel reports again.
    /// `first_due`: the caller needs that first one read all the same (an endpoint's
    /// socket, whose look asks the peer probe; a deferral due at it, `defer::due_from`).
    pub fn unanswered(
        &mut self,
        cookie: Cookie,
        probes_out: u32,
        first_due: bool,
        now: Mono,
    ) -> bool {
        let Some(silent) = self.idle.silent else {
            return false;
        };
        if probes_out < reported_from(silent.probes) && !first_due {
            // Made for a socket never looked at, as a look would (forgotten when it closes).
            let probes = u8::try_from(probes_out).unwrap_or(u8::MAX);
            self.sockets.update(cookie, |st| {
                if st.probes_seen.is_none_or(|s| s.at <= now) {
                    st.probes_seen = Some(super::run::ProbesSeen { probes, at: now });
                }
            });
            return false;
        }
        self.sockets.update(cookie, |st| {
            self.idle.look_by(cookie, &mut st.idle_due, now);
        });
        true
    }

    /// Whether a kill awaits a healthy connection to its endpoint: every socket then counts,
    /// so the sweep visits them all.
    #[must_use]
    pub fn awaits_recovery(&self) -> bool {
        self.escalation
            .as_ref()
            .is_some_and(super::Escalation::waiting)
    }

    /// The stall rule: `--stall-timeout` and `--stall-unanswered`.
    #[must_use]
    pub fn stall(&self) -> Stall {
        self.settings.stall
    }

    /// The silent rule in force: `None` when keepalive is off or never armed.
    #[must_use]
    pub fn silence(&self) -> Option<Silence> {
        self.idle.silent
    }

    /// The keepalive the probe was asked to arm.
    #[must_use]
    pub fn keepalive(&self) -> &Keepalive {
        &self.idle.want
    }

    /// Sockets per verdict at their last look, every verdict listed.
    pub fn counts(&self) -> impl Iterator<Item = (Verdict, u64)> + '_ {
        self.tally.counts()
    }

    /// The verdict to show for a socket without reading the kernel: its last look's, or,
    /// never looked at, the record's (`between`).
    #[must_use]
    pub fn shown(&self, cookie: Cookie, rec: &Record, now: Mono) -> Verdict {
        self.sockets
            .get(cookie)
            .and_then(|st| st.verdict)
            .unwrap_or_else(|| self.between(cookie, rec, now))
    }
}

/// Unanswered probes from which the probe reports each one as news (its `UNANSWERED_MIN`):
/// two before the silent rule's count, so the agent looks while the rule is still ahead, and
/// at least 1 (a probe with none unanswered before it is a healthy socket's routine one). The
/// probe also reports the first unanswered one, whatever this is.
#[must_use]
pub fn reported_from(silent_probes: u8) -> u32 {
    u32::from(silent_probes).saturating_sub(2).max(1)
}
