//! Idle sockets: finding a dead peer behind a connection nobody is talking to.
//!
//! An idle socket never retransmits, so the probe's callbacks never nominate it. The probe
//! arms keepalive on it instead, and this module decides when its `tcp_info` is worth a look:
//! not before the socket has been idle for its keepalive time (no probe can have gone out),
//! and then at the earliest moment it could have become silent. A healthy idle socket,
//! whose probes are answered, costs one `sock_diag` request per keepalive period.

use std::time::Duration;

use lifeline_common::{
    Keepalive,
    features::{ITER_KEEPALIVE, KEEPALIVE_READ, KEEPALIVE_SET},
};

use crate::{Arming, Cookie, Deferred, Mono, Record, TcpInfo, due::DueIndex};

pub(crate) struct IdleWatch {
    /// The silent rule; `None` when keepalive is off: nothing is ever silent.
    pub silent: Option<super::Silence>,
    /// What the probe was asked to arm (for `lifeline status`).
    pub want: Keepalive,
    /// The probe reports unanswered keepalive probes as news, so a socket is looked at only
    /// once the kernel says its probes go unanswered; without that hook every armed idle
    /// socket is looked at on a schedule (one `sock_diag` read per silent timeout).
    pub notified: bool,
    /// Which socket is next worth a look; each one's time is its `SocketState::idle_due`,
    /// the `slot` every method here takes.
    next: DueIndex,
}

impl IdleWatch {
    #[must_use]
    pub(crate) fn new(silent: Option<super::Silence>, want: Keepalive) -> Self {
        Self {
            silent: silent.filter(|_| want.idle_s != 0),
            want,
            notified: false,
            next: DueIndex::default(),
        }
    }

    fn watches(&self, rec: &Record) -> bool {
        self.silent.is_some() && rec.arming.in_force() && rec.keepalive.idle_s != 0
    }

    /// Whether `recorded` may schedule a first look for `rec` (so a slot is worth making).
    #[must_use]
    pub(crate) fn schedules(&self, rec: &Record) -> bool {
        !self.notified && self.watches(rec)
    }

    /// A record appeared or changed. On the schedule (no news of unanswered probes), its
    /// first look is due once it has been idle for its keepalive time: before that the
    /// kernel cannot have sent a single probe (the record's last ACK progress is a lower
    /// bound of the last segment received).
    pub(crate) fn recorded(&mut self, cookie: Cookie, slot: &mut Option<Mono>, rec: &Record) {
        if !self.schedules(rec) || slot.is_some() {
            return;
        }
        let idle = Duration::from_secs(u64::from(rec.keepalive.idle_s));
        self.next.set(cookie, slot, rec.last_ack + idle);
    }

    /// A look at `cookie` by `now` at the latest: the kernel reports its keepalive probes
    /// unanswered (look now), or an endpoint's socket's probe answer is overdue then.
    pub(crate) fn look_by(&mut self, cookie: Cookie, slot: &mut Option<Mono>, now: Mono) {
        if self.silent.is_some() {
            self.next.set_earlier(cookie, slot, now);
        }
    }

    /// Whether the idle socket `rec` should have its `tcp_info` read in this sweep (the
    /// caller knows it idle: nothing outstanding as far as the record or the last look
    /// tells).
    #[must_use]
    pub(crate) fn due(&self, slot: Option<Mono>, rec: &Record, now: Mono) -> bool {
        if !self.watches(rec) {
            return false;
        }
        if self.notified {
            return slot.is_some_and(|t| now >= t);
        }
        let idle = Duration::from_secs(u64::from(rec.keepalive.idle_s));
        if Duration::from_millis(now.ms_since(rec.last_ack)) < idle {
            return false;
        }
        slot.is_none_or(|t| now >= t)
    }

    /// After a look: the socket cannot turn silent before nothing has arrived from its peer
    /// for the whole silent timeout, so the next look is due exactly then; when the kernel
    /// reports unanswered probes and none are out, not before it reports them again.
    pub(crate) fn looked(
        &mut self,
        cookie: Cookie,
        slot: &mut Option<Mono>,
        info: &TcpInfo,
        now: Mono,
    ) {
        let Some(silent) = self.silent.map(|s| s.after) else {
            return;
        };
        if self.notified && info.probes == 0 {
            self.next.remove(cookie, slot);
            return;
        }
        let quiet = Duration::from_millis(u64::from(info.last_ack_recv_ms));
        self.next
            .set(cookie, slot, now + silent.saturating_sub(quiet));
    }

    /// A socket visited while its scheduled look was due that the idle rules did not look at
    /// (busy, in a trouble episode, or its view unreadable): the look was served, and is not
    /// left due. Left due, it made every sweep wake the next at `MIN_WAKE` for as long as the
    /// socket stayed busy (measured: 20 sweeps a second and 1.1 % of a core with 40 watched
    /// sockets at 5 % loss, against 0.3 %). With the kernel's unanswered-probe news the next
    /// look comes with that news; without it, one keepalive time on, the earliest the socket
    /// can have been idle that long.
    pub(crate) fn passed_over(
        &mut self,
        cookie: Cookie,
        slot: &mut Option<Mono>,
        rec: &Record,
        now: Mono,
    ) {
        if !slot.is_some_and(|t| t <= now) {
            return;
        }
        if self.notified {
            self.next.remove(cookie, slot);
        } else {
            let idle = Duration::from_secs(u64::from(rec.keepalive.idle_s.max(1)));
            self.next.set(cookie, slot, now + idle);
        }
    }

    /// The sockets whose look is due now, for the sweep to visit.
    pub(crate) fn due_now(&self, now: Mono) -> impl Iterator<Item = Cookie> + '_ {
        self.next.due(now)
    }

    /// How soon the earliest scheduled look is due, so the sweep can wake for it: a silent
    /// socket is then found on time, not up to a sweep interval late.
    #[must_use]
    pub(crate) fn next_due(&self, now: Mono) -> Option<Duration> {
        self.next.first().map(|t| t - now)
    }

    /// Sockets with a look scheduled.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn scheduled(&self) -> usize {
        self.next.len()
    }

    /// A forgotten socket's slot leaves the index.
    pub(crate) fn forget(&mut self, cookie: Cookie, mut slot: Option<Mono>) {
        self.next.remove(cookie, &mut slot);
    }
}

/// `lifeline status`'s keepalive column for one socket: the values in force, or why there
/// are none, with the Linux release that would change that (`lifeline_common::features`),
/// and whether they are deferred to the application's own deadline (`crate::defer`).
#[must_use]
pub fn describe(rec: &Record, want: &Keepalive, can_adopt: bool) -> String {
    let values = values(rec, want, can_adopt);
    match rec.deferred {
        Deferred::No => values,
        Deferred::Off => {
            "off (deferred to the application's own: it has none; lifeline only observes)"
                .to_owned()
        }
        Deferred::ToDeadline => {
            format!("{values} (deferred to the application's own deadline; lifeline only observes)")
        }
        Deferred::Refused(errno) => format!("{values} (deferral refused: errno {errno})"),
    }
}

fn values(rec: &Record, want: &Keepalive, can_adopt: bool) -> String {
    let k = &rec.keepalive;
    let needs = |(major, minor): (u32, u32)| format!("needs Linux {major}.{minor}");
    let pre_existing = || {
        format!(
            "not armed: pre-existing socket ({}: TCP iterator)",
            needs(ITER_KEEPALIVE.since)
        )
    };
    match rec.arming {
        Arming::Off => "off".to_owned(),
        a if a.in_force() && k.idle_s == 0 => "off".to_owned(),
        Arming::Armed => {
            let own = k.idle_s < want.idle_s || k.intvl_s < want.intvl_s || k.cnt < want.cnt;
            format!(
                "{}s,{}s,{}{}",
                k.idle_s,
                k.intvl_s,
                k.cnt,
                if own { " (app's, stricter)" } else { "" }
            )
        }
        Arming::SetUnread => format!(
            "{}s,{}s,{} (set without reading: reading {})",
            k.idle_s,
            k.intvl_s,
            k.cnt,
            needs(KEEPALIVE_READ.since)
        ),
        Arming::NoIterator => pre_existing(),
        Arming::Pending if !can_adopt => pre_existing(),
        Arming::Pending => "not armed (yet)".to_owned(),
        Arming::Refused(errno) if errno.0 == 22 => format!(
            "not armed: kernel refused (errno 22; {})",
            needs(KEEPALIVE_SET.since)
        ),
        Arming::Refused(errno) => format!("not armed: kernel refused (errno {errno})"),
    }
}

#[cfg(test)]
#[path = "idle_tests.rs"]
mod tests;
