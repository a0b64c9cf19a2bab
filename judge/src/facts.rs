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

    /// The kernel reports keepalive probes of `cookie` unanswered: look now.
    pub fn unanswered(&mut self, cookie: Cookie, now: Mono) {
        if self.idle.silent.is_some() {
            self.sockets.update(cookie, |st| {
                self.idle.unanswered(cookie, &mut st.idle_due, now);
            });
        }
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
