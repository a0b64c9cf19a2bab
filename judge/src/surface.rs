//! The judge's surface to the loop: per socket `look` after `wants_info`, per kill `decide`
//! and `outcome` (`gate.rs`), once per sweep `end_sweep`. Each takes the facts the loop read
//! and answers with a typed decision the loop carries out; the loop never reaches into the
//! judge's state.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use super::{
    CONFIRM_AFTER, Judge, Kill, Read, Reason, RestartRequest, Seen, Socket, Whose, age_ms,
    gate::Action,
};

/// What one look at a socket decided; `Judge::look` answers `None` when the socket is gone.
#[derive(Debug)]
pub struct Look {
    /// A confirmed reason to kill it, with its evidence (whose it is still to be found).
    pub kill: Option<Kill>,
    /// Ask the peer probe about its peer, and why.
    pub probe: Option<&'static str>,
    /// `--on-orphan log`: report this orphan once (endpoint, how long absent).
    pub report_orphan: Option<(String, Duration)>,
    /// How soon this socket wants the next sweep.
    pub wake: Option<Duration>,
}

/// What to do with one confirmed kill.
#[derive(Debug)]
pub struct Decision {
    pub action: Action,
    /// `Action::Restart`: the request for the restarter, unless one was made for the socket.
    pub restart: Option<RestartRequest>,
    /// The first failure of a socket outside the unit for its target: say once that it
    /// restarts nothing.
    pub first_outside: bool,
}

/// What the end of a sweep decided.
#[derive(Debug, Default)]
pub struct SweepEnd {
    /// How soon the judge wants the next sweep (a confirming look, a scheduled look).
    pub wake: Option<Duration>,
    /// Kills not recovered from within `--escalate-after`: restart requests.
    pub restarts: Vec<RestartRequest>,
    /// Kills recovered from: the peer and how long it took, for the log.
    pub recovered: Vec<(SocketAddr, Duration)>,
}

/// A scheduled look is woken for no sooner than this, so a sweep is never a busy loop.
const MIN_WAKE: Duration = Duration::from_millis(50);

impl Judge {
    /// Judge one socket from its record and, when `wants_info` asked for it, the kernel's
    /// view: the verdict (kept for the counts), then the two witnesses, then the endpoint
    /// rules (only the endpoint's own sockets have any). `None`: the socket is gone.
    pub fn look(
        &mut self,
        s: &Socket<'_>,
        read: Option<&Read>,
        now_ns: u64,
        at: Instant,
    ) -> Option<Look> {
        let (verdict, info) = self.verdict(s, read, now_ns)?;
        let mut look = Look {
            kill: None,
            probe: None,
            report_orphan: None,
            wake: None,
        };
        let mut reason = self
            .confirmed(s.cookie, verdict, info.as_ref())
            .then_some(Reason::Dead(verdict));
        if reason.is_none() {
            let call = self.endpoint_reason(s, verdict, info.as_ref(), at);
            look.probe = call.probe;
            look.report_orphan = call.report_orphan;
            look.wake = call.wake;
            reason = call.reason;
        }
        if let (Some(reason), Some(info)) = (reason, info) {
            look.kill = Some(Kill {
                cookie: s.cookie,
                now_ns,
                rec: *s.rec,
                info,
                reason,
                whose: Whose::default(), // the loop finds it out before acting
            });
        }
        self.tally
            .set(s.cookie, verdict, s.rec, self.settings.stall.after);
        self.seen.push(Seen {
            peer: s.rec.peer(),
            endpoint_socket: s.followed.then_some(s.member.is_some()),
            verdict,
            established_age: Duration::from_millis(age_ms(now_ns, s.rec.established_ns)),
        });
        Some(look)
    }

    /// The action for a confirmed kill whose owner is known (`kill.whose`).
    /// `endpoint_healthy`: the guard's answer for this batch (`true` without an endpoint).
    pub fn decide(&mut self, kill: &Kill, endpoint_healthy: bool, at: Instant) -> Decision {
        let first_outside = self
            .escalation
            .as_mut()
            .is_some_and(|e| e.first_outside(kill));
        let action = self.gate(kill, endpoint_healthy, at);
        let restart = if action == Action::Restart {
            self.escalation
                .as_mut()
                .and_then(|e| e.restart_instead(kill, at))
        } else {
            None
        };
        Decision {
            action,
            restart,
            first_outside,
        }
    }

    /// After the sweep's looks and kills: the dead verdicts become the previous look, and the
    /// escalation checks every kill for a recovery over the sockets looked at.
    pub fn end_sweep(&mut self, now_ns: u64, at: Instant) -> SweepEnd {
        let confirm = self.turn_looks().then_some(CONFIRM_AFTER);
        let scheduled = self.idle.next_due(now_ns).map(|d| d.max(MIN_WAKE));
        let seen = std::mem::take(&mut self.seen);
        let (restarts, recovered) = self
            .escalation
            .as_mut()
            .map(|e| e.after_sweep(&seen, at))
            .unwrap_or_default();
        SweepEnd {
            wake: confirm.into_iter().chain(scheduled).min(),
            restarts,
            recovered,
        }
    }
}
