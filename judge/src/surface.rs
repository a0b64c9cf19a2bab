//! The judge's surface to the loop: per socket `look` after `wants_info`, per kill `decide`
//! and `outcome` (`gate.rs`), once per sweep `end_sweep`. Each takes the facts the loop read
//! and answers with a typed decision the loop carries out; the loop never reaches into the
//! judge's state.

use std::{net::SocketAddr, time::Duration};

use super::{
    CONFIRM_AFTER, Evidence, Judge, Kill, Mono, ProbeAsk, Read, Reason, RestartRequest, Seen,
    Socket, TcpInfo, Verdict, Whose, blip, gate::Action, life,
};

/// What one look at a socket decided; `Judge::look` answers `None` when the socket is gone.
#[derive(Debug)]
pub struct Look {
    /// A confirmed reason to kill it, with its evidence (whose it is still to be found).
    pub kill: Option<Kill>,
    /// Ask the peer probe about its peer, and why.
    pub probe: Option<ProbeAsk>,
    /// `--on-orphan log`: report this orphan once (endpoint, how long absent).
    pub report_orphan: Option<(String, Duration)>,
    /// How soon this socket wants the next sweep.
    pub wake: Option<Duration>,
    /// The endpoint's socket and its own round trip failed: re-resolve the endpoint now.
    pub resolve: bool,
    /// The endpoint's idle socket has its first keepalive probe overdue: open its fast
    /// phase now (docs/ARCHITECTURE.md, "Fast probes").
    pub hasten: bool,
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
    pub fn look(&mut self, s: &Socket<'_>, read: Option<&Read>, at: Mono) -> Option<Look> {
        let (verdict, info) = self.verdict(s, read, at)?;
        let mut look = Look {
            kill: None,
            probe: None,
            report_orphan: None,
            wake: None,
            resolve: false,
            hasten: false,
        };
        let mut reason = self
            .confirmed(s.cookie, verdict, info.as_ref())
            .then_some(Reason::Dead(verdict));
        if let (Some(_), Some(i)) = (&reason, &info) {
            // An endpoint socket's death needs a live path (`blip.rs`).
            if let Some(wait) = blip::wait_for_path(s, i, at) {
                reason = None;
                look.probe = wait.probe;
                look.wake = wait.wake;
            }
        }
        if reason.is_none() && look.probe.is_none() {
            let call = self.endpoint_reason(s, verdict, info.as_ref(), at);
            look.probe = call.probe;
            look.report_orphan = call.report_orphan;
            look.wake = call.wake;
            look.resolve = call.resolve;
            look.hasten = call.hasten;
            reason = call.reason;
        }
        if let (Some(reason), Some(info)) = (reason, info) {
            // Evidence older than the socket's last sign of life is no evidence: no kill, and
            // the next look judges it afresh.
            look.kill = evidence(s, &reason, &info, at).map(|evidence| Kill {
                cookie: s.cookie,
                rec: *s.rec,
                info,
                reason,
                evidence,
                path_epoch: self.path.epoch,
                whose: Whose::default(), // the loop finds it out before acting
            });
        }
        let stall = self.settings.stall.after;
        self.sockets.update(s.cookie, |st| {
            self.tally.set(s.cookie, st, verdict, s.rec, stall);
        });
        self.seen.push(Seen {
            peer: s.rec.peer,
            endpoint_socket: s.followed.then_some(s.member.is_some()),
            verdict,
            established_age: Duration::from_millis(at.ms_since(s.rec.established)),
        });
        Some(look)
    }

    /// The action for a confirmed kill whose owner is known (`kill.whose`).
    /// `endpoint_healthy`: the guard's answer for this batch (`true` without an endpoint).
    pub fn decide(&mut self, kill: &Kill, endpoint_healthy: bool, at: Mono) -> Decision {
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

    /// The path to the endpoint was found down at `at` (a held batch, or a peer probe whose
    /// peer and every other address were silent, from its start).
    pub fn path_down(&mut self, at: Mono) {
        self.path.down(at);
    }

    /// The path was found working at `at` (a connection accepted, or a socket heard from
    /// its peer). On a return, every pending verdict is earned again: the first of the two
    /// looks and the early migrations are forgotten, and a socket silent across the return
    /// needs fresh evidence (`path.rs`). Returns whether this was a return.
    pub fn path_back(&mut self, at: Mono) -> bool {
        let back = self.path.back(at);
        if back {
            self.sockets.update_marked(|st| {
                st.dead_before = false;
                st.dead_now = false;
                st.early = None;
            });
        }
        back
    }

    /// Whether `cookie` was silent across the path's last return and its verdict waits for
    /// evidence gathered after it.
    #[must_use]
    pub fn awaits_fresh(&self, cookie: super::Cookie) -> bool {
        self.sockets.get(cookie).is_some_and(|st| st.base.is_some())
    }

    /// Whether `kill` was decided since the path's last return: one decided before it rests
    /// on evidence gathered while the path was down, and is earned again.
    #[must_use]
    pub fn current(&self, kill: &Kill) -> bool {
        kill.path_epoch == self.path.epoch
    }

    /// Since when the path has been found down, while it is.
    #[must_use]
    pub fn path_down_since(&self) -> Option<Mono> {
        self.path.down
    }

    /// After the sweep's looks and kills: the dead verdicts become the previous look, and the
    /// escalation checks every kill for a recovery over the sockets looked at.
    pub fn end_sweep(&mut self, at: Mono) -> SweepEnd {
        let confirm = self.turn_looks().then_some(CONFIRM_AFTER);
        let scheduled = self.idle.next_due(at).map(|d| d.max(MIN_WAKE));
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

/// The evidence a kill rests on: the look's moment, the socket's last sign of life, and
/// when the unanswered run began: the record's trouble episode for a stall of data alone, the probe's
/// start for a dead peer, the last sign of life itself where the run has no recorded start
/// (silence: the first unanswered probe follows it; a polled socket). A migration at a quiet
/// moment rests on DNS, not silence: its evidence is the look itself.
fn evidence(s: &Socket<'_>, reason: &Reason, info: &TcpInfo, at: Mono) -> Option<Evidence> {
    let life = life(info, at);
    let since = match (reason, s.rec.trouble) {
        (Reason::DeadPeer { probe_started, .. }, _) => *probe_started,
        // A run that began with keepalive probes began after the last sign of life.
        (Reason::Dead(Verdict::Stalled), Some(trouble)) if info.probes == 0 => trouble.min(at),
        (Reason::Orphaned { trouble: None, .. }, _) => at,
        _ => life,
    };
    Evidence::new(at, life, since)
}
