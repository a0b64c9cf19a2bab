//! Endpoint-driven reasons to kill: a dead peer (every try of the peer probe timed out) and an
//! orphaned peer (its address left the endpoint's address set for longer than the grace). Both
//! only for the endpoint's own sockets (`Socket::member`, the fact `endpoint::Members` keeps).

use std::time::Duration;

use super::{
    Cookie, Judge, Membership, Mono, ProbeAsk, Reason, Settings, Socket, TcpInfo, Verdict, early,
    evidence::SLACK, life, socket::SocketState,
};

/// Sockets to a dead peer are killed within this, spread so a fleet does not re-dial at
/// the same instant. The probes that find a peer dead already start at each socket's own
/// first trouble (its first unanswered keepalive probe, within the 1 s keepalive cycle, or
/// its first RTO, at its own request's moment), so a fleet's findings are spread over a
/// second before this adds to it; more would only hold a dead connection longer.
pub(crate) const DEAD_PEER_JITTER: Duration = Duration::from_millis(500);
/// An orphaned socket due for migration but busy is looked at again this soon.
pub(crate) const QUIET_RECHECK: Duration = Duration::from_millis(200);
const FAR: Duration = Duration::from_hours(1);

/// The judge's only randomness, handed in at start (`Settings::seed`): the agent draws one
/// per process, so each node spreads its kills over its own moments, and a test passes a
/// fixed one and knows every delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seed(pub u64);

impl Seed {
    /// A delay in `[0, max)`, fixed per socket for this seed. The cookie is mixed with the
    /// seed by `SplitMix64`'s finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom
    /// number generators", OOPSLA 2014; constants from <https://prng.di.unimi.it/splitmix64.c>):
    /// consecutive cookies land far apart, and the value is the same on every Rust release.
    #[must_use]
    pub fn jitter(self, cookie: Cookie, max: Duration) -> Duration {
        let mut z = self
            .0
            .wrapping_add(cookie.0.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let max_ms = u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1);
        Duration::from_millis(z % max_ms)
    }
}

/// What the endpoint rules say about one socket.
#[derive(Debug, Default)]
pub(crate) struct EndpointCall {
    pub reason: Option<Reason>,
    /// How soon this socket wants the next sweep.
    pub wake: Option<Duration>,
    /// Ask the peer probe about this socket's peer, and why.
    pub probe: Option<ProbeAsk>,
    /// `--on-orphan log`: report this orphan once (endpoint, how long absent).
    pub report_orphan: Option<(String, Duration)>,
    /// Look at it again this soon, whatever the news: an idle socket of the endpoint whose
    /// keepalive probe's answer will be overdue then (`early::overdue_in`).
    pub look_in: Option<Duration>,
    /// Its own round trip failed (`early::trouble`): re-resolve its endpoint now.
    pub resolve: bool,
    /// Its first keepalive probe is overdue: its next ones at the fast cadence from now.
    pub hasten: bool,
}

impl Settings {
    /// How long after its peer was found dead a socket is killed (within `DEAD_PEER_JITTER`).
    pub(super) fn dead_peer_delay(&self, cookie: Cookie) -> Duration {
        self.seed.jitter(cookie, DEAD_PEER_JITTER)
    }

    /// When the orphan `cookie` is due to migrate: a random point of `--migrate-spread`
    /// after it was first found orphaned, fixed from then on (`slot`: its
    /// `SocketState::migration`).
    pub(super) fn migration_time(&self, cookie: Cookie, slot: &mut Option<Mono>, at: Mono) -> Mono {
        *slot.get_or_insert_with(|| at + self.seed.jitter(cookie, self.spread))
    }
}

impl Judge {
    /// Dead peer and orphan rules for one socket (`info`: the kernel's view, when read).
    pub(crate) fn endpoint_reason(
        &mut self,
        s: &Socket<'_>,
        verdict: Verdict,
        info: Option<&TcpInfo>,
        at: Mono,
    ) -> EndpointCall {
        let settings = &self.settings;
        self.sockets.update(s.cookie, |st| {
            let call = endpoint_reason(settings, st, s, verdict, info, at);
            if let Some(d) = call.look_in {
                let when = self.gather.moment(s.rec.peer, at + d, at);
                self.idle.look_by(s.cookie, &mut st.idle_due, when);
            }
            call
        })
    }
}

/// Dead peer and orphan rules for one socket whose state is `st`.
pub(crate) fn endpoint_reason(
    settings: &Settings,
    st: &mut SocketState,
    s: &Socket<'_>,
    verdict: Verdict,
    info: Option<&TcpInfo>,
    at: Mono,
) -> EndpointCall {
    let mut call = EndpointCall::default();
    // DNS and the peer probe judge the endpoint's own sockets only; any other socket on
    // its port gets the evidence verdicts alone.
    let Some((endpoint, standing)) = s.member else {
        return call;
    };
    // First sign of trouble: an RTO or retransmission with no ACK progress since (the
    // probe clears it on progress), or keepalive probes out unanswered.
    let trouble = verdict != Verdict::Healthy && s.rec.trouble.is_some()
        || info.is_some_and(|i| i.probes > 0 || i.unacked > 0 && i.retransmits > 0);
    // How long the peer has been out of the endpoint's answers, when it is.
    let left = match standing {
        Membership::Leaving { absent_for, .. } | Membership::Orphaned { absent_for } => {
            Some(*absent_for)
        }
        _ => None,
    };
    // Whether leaving means moved: not where the answers rotate subsets of the addresses
    // (the peer may be in the next one); orphaned always does.
    let moved = match standing {
        Membership::Leaving { rotates, .. } => !rotates,
        _ => left.is_some(),
    };
    // Trouble asks what the path does now: since this trouble episode began, when the kernel
    // has one on (its first retransmission), else since the socket last heard from its peer.
    // The episode's start, not the socket's life: the probe's answer is also what tells the
    // kernel the path works (`PATH_ALIVE`), which keeps this socket's linear timeouts on for
    // the episode only when it came after its start; an answer from just before (another
    // socket's episode, moments earlier) would leave them off and its evidence slow.
    if trouble {
        call.probe = Some(ProbeAsk {
            why: "trouble on a watched socket",
            after: s
                .rec
                .trouble
                .map(|t| t + SLACK)
                .or_else(|| info.map(|i| life(i, at))),
        });
    } else if left.is_some() {
        call.probe = Some(ProbeAsk {
            why: "left the endpoint's address set",
            after: None,
        });
    }
    if let Some(dead) = s.dead_peer() {
        let due = dead.found + settings.dead_peer_delay(s.cookie);
        // The finding covers a socket silent since before the probe began: a re-dial, or
        // a socket that heard from the peer since, is not dead by it.
        let covered = |i: &TcpInfo| life(i, at) + SLACK < dead.probe_started;
        if at < due {
            call.wake = Some(due - at);
        } else if info.is_some_and(covered) {
            call.reason = Some(Reason::DeadPeer {
                endpoint: Some(endpoint.clone()),
                probe_started: dead.probe_started,
            });
            return call;
        }
    }
    // Left, and its own round trip failed: migrated now (`early.rs`). Back in the set:
    // nothing early is pending.
    if !moved {
        st.early = None;
    }
    if let (Some(absent_for), true, Some(i)) = (left.filter(|_| moved), settings.migrate, info) {
        let trouble = early::trouble(i, s.rec, &settings.want);
        if let Some((trouble, due)) =
            early::early_due(settings.seed, s.cookie, &mut st.early, trouble, at)
        {
            if at >= due {
                call.reason = Some(Reason::Orphaned {
                    endpoint: endpoint.clone(),
                    absent_for,
                    trouble: Some(trouble),
                });
                return call;
            }
            call.wake = Some(call.wake.unwrap_or(FAR).min(due - at));
        } else if s.rec.trouble.is_some() && i.unacked > 0 {
            // Retransmitting (the record's episode) but no RTO yet (a tail loss probe
            // came first): one is due within the RTO, and brings no news of its own.
            call.wake = Some(call.wake.unwrap_or(FAR).min(QUIET_RECHECK));
        } else if let Some(overdue) = early::overdue_in(i, s.rec, &settings.want) {
            // Idle: looked at again when its probe's answer is overdue.
            call.wake = Some(call.wake.unwrap_or(FAR).min(overdue));
        }
    }
    if let Some(i) = info {
        let failed = early::trouble(i, s.rec, &settings.want);
        call.resolve = failed.is_some();
        // Its first probe unanswered half an interval on (the look `look_in` scheduled):
        // the fast phase opens now, half an interval before the kernel's second probe would
        // open it. The same read, the same evidence (a probe out for longer than a healthy
        // peer's round trip); the verdict still needs all its unanswered probes.
        call.hasten = failed == Some(early::Trouble::Unanswered) && i.probes == 1;
        if left.is_none() && !call.resolve {
            // In the set: its probe's answer, when overdue, is the first sign that the
            // endpoint moved, half an interval before the probe hook's news (it comes with
            // the next probe). One look per keepalive cycle, for the endpoint's sockets only.
            call.look_in = early::overdue_in(i, s.rec, &settings.want);
        }
    }
    let Membership::Orphaned { absent_for } = standing else {
        return call;
    };
    if !settings.migrate {
        if !st.orphan_logged {
            st.orphan_logged = true;
            call.report_orphan = Some((endpoint.clone(), *absent_for));
        }
        return call;
    }
    let due = settings.migration_time(s.cookie, &mut st.migration, at);
    if at < due {
        call.wake = Some(call.wake.unwrap_or(FAR).min(due - at));
        return call;
    }
    // Only at a quiet moment: with nothing in flight, no request dies with the socket.
    if info.is_some_and(|i| i.unacked == 0) {
        call.reason = Some(Reason::Orphaned {
            endpoint: endpoint.clone(),
            absent_for: *absent_for,
            trouble: None,
        });
    } else {
        call.wake = Some(call.wake.unwrap_or(FAR).min(QUIET_RECHECK));
    }
    call
}
