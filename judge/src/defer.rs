//! Dry run observes, Hold holds: while lifeline only observes (`--dry-run` always; a hold while
//! no endpoint address accepts a connection), its own keepalive must never end a connection
//! sooner than the application's own settings would. lifeline arms what it needs to see a
//! dead peer (1 s probes, `--silent-probes` of them unanswered); once a socket's evidence is
//! in, its keepalive is re-timed so that the kernel's abort lands no sooner than the
//! application's own deadline, and lifeline's values come back when it answers again or
//! lifeline acts again. This module is the plan; the TCP iterator applies it
//! (`agent-ebpf/src/restore.rs`), the daemon decides when (`agent/src/daemon/defer.rs`).
//!
//! The kernel's rules it builds on (`tcp_keepalive_timer()`,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>): after `TCP_KEEPIDLE`
//! of silence a timer fires every `TCP_KEEPINTVL`; at each fire the socket is aborted when
//! `icsk_probes_out >= TCP_KEEPCNT` (no `TCP_USER_TIMEOUT`), or when the silence has lasted
//! the user timeout and a probe is out (with one: the count is then ignored), else one more
//! probe goes out. Only an ACK resets `icsk_probes_out`; `TCP_KEEPCNT` is at most 127 and the
//! two times at most 32,767 s (`MAX_TCP_KEEP*`, include/net/tcp.h). So the application's own
//! keepalive (idle I, interval V, count C) aborts an idle socket I + C x V after the last
//! segment from its peer, one with a user timeout U at its first probe instant (past the
//! first probe) at or after U, and one without `SO_KEEPALIVE` never. Linear timeouts change
//! no abort time (the data retransmission limit is a time, `retransmits_timed_out()`), and
//! `TCP_USER_TIMEOUT` also bounds data retransmissions, so lifeline's (`--user-timeout`) goes
//! back to the application's too.
//!
//! The plan probes as often as the 127-probe limit allows between now and the application's
//! deadline (a peer that answers again is seen at once, and a hold that ends finds its
//! sockets' answers), with the count set relative to the probes already out. When that
//! would probe less often than the application itself, or the application has a user
//! timeout, it probes at the application's own instants instead; when nothing fits the
//! kernel's limits, or the application's keepalive is off or unknown, keepalive goes off:
//! the kernel then never aborts the idle socket, which is never sooner than anything.

use std::time::Duration;

use lifeline_common::{
    Keepalive,
    keepalive::{MAX_KEEPCNT, MAX_KEEPIDLE_S, MAX_KEEPINTVL_S},
    restore::{
        DEFER_ALIGN, DEFER_END, DEFER_OFF, DEFER_USER_TIMEOUT, Defer, Original, SET_USER_TIMEOUT,
        opt,
    },
};

use crate::TcpInfo;

/// Probes the kernel may send between the agent's read and the iterator's pass (a fast
/// phase's last pokes, `--silent-probes` + 2 at most), kept free below the 127 limit so a
/// count made relative to the probes out at the pass is never cut short.
const HEADROOM: u32 = 4;

/// The application's own keepalive on a socket: what the kernel would do without lifeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppKeepalive {
    /// `SO_KEEPALIVE` off: the kernel never aborts an idle socket.
    Off,
    /// On, with these values (its own, or the kernel's defaults it inherits).
    On { idle_s: u32, intvl_s: u32, cnt: u32 },
    /// Not known: set before the connection was established on a kernel that cannot read
    /// options back (before 6.1), and never since.
    Unknown,
}

/// What the application set on a socket, from what lifeline recorded when arming it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct App {
    pub keepalive: AppKeepalive,
    /// `TCP_USER_TIMEOUT`, ms (0: none); `None`: not known.
    pub user_timeout_ms: Option<u32>,
    /// lifeline set `TCP_USER_TIMEOUT` to another value (`--user-timeout`).
    pub user_timeout_changed: bool,
}

impl App {
    /// From the socket's `ORIGINALS` entry.
    #[must_use]
    pub fn from_original(o: &Original) -> Self {
        let all = opt::IDLE | opt::INTVL | opt::CNT;
        let keepalive = if o.known & opt::KEEPALIVE == 0 {
            AppKeepalive::Unknown
        } else if o.keepalive == 0 {
            AppKeepalive::Off
        } else if o.known & all == all && o.idle_s > 0 && o.intvl_s > 0 && o.cnt > 0 {
            AppKeepalive::On {
                idle_s: o.idle_s,
                intvl_s: o.intvl_s,
                cnt: o.cnt,
            }
        } else {
            AppKeepalive::Unknown
        };
        Self {
            keepalive,
            user_timeout_ms: (o.known & opt::USER_TIMEOUT != 0).then_some(o.user_timeout_ms),
            user_timeout_changed: o.changed & opt::USER_TIMEOUT != 0,
        }
    }

    /// The application's keepalive deadline, counted from the last segment from the peer;
    /// `None`: it never aborts an idle socket (or it cannot be known).
    #[must_use]
    pub fn deadline_s(&self) -> Option<u64> {
        let AppKeepalive::On {
            idle_s,
            intvl_s,
            cnt,
        } = self.keepalive
        else {
            return None;
        };
        let (i, v) = (u64::from(idle_s), u64::from(intvl_s));
        match self.user_timeout_ms? {
            0 => Some(i + u64::from(cnt) * v),
            u => Some(i + first_probe_at_or_after(u, i, v).max(1) * v),
        }
    }
}

/// The index k of the first probe instant I + k x V (seconds) at or after `ms` milliseconds.
fn first_probe_at_or_after(ms: u32, i: u64, v: u64) -> u64 {
    let (ms, i_ms, v_ms) = (u64::from(ms), i * 1000, v * 1000);
    if ms <= i_ms {
        0
    } else {
        (ms - i_ms).div_ceil(v_ms)
    }
}

/// What the deferral does to keepalive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepalivePlan {
    /// Data is in flight: the keepalive timer sends nothing and aborts nothing then.
    Keep,
    /// The application's own deadline has passed already: lifeline's values abort the
    /// socket no sooner than it, nothing to change.
    Due,
    /// Keepalive off: the application's own keepalive never aborts it, or cannot be known,
    /// or its deadline does not fit the kernel's limits from here.
    Off,
    /// The next probe `idle_s` after the last segment from the peer, then every `intvl_s`;
    /// the abort after `remaining` more unanswered.
    Align {
        idle_s: u32,
        intvl_s: u32,
        remaining: u32,
    },
}

/// One socket's deferral: typed data the daemon logs and the iterator applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deferral {
    pub keepalive: KeepalivePlan,
    /// `TCP_USER_TIMEOUT` back to the application's while deferred (lifeline changed it).
    pub user_timeout_ms: Option<u32>,
    /// The kernel's keepalive abort under the plan, after the last segment from the peer;
    /// `None`: never (or not changed: `Keep`, `Due`).
    pub abort_after: Option<Duration>,
    /// The application's own, likewise; `None`: never, or not known.
    pub app_deadline: Option<Duration>,
}

impl Deferral {
    /// Whether anything is to be applied to the socket.
    #[must_use]
    pub const fn changes(&self) -> bool {
        !matches!(self.keepalive, KeepalivePlan::Keep | KeepalivePlan::Due)
            || self.user_timeout_ms.is_some()
    }

    /// The `DEFER` entry that applies it; `None` when nothing changes.
    #[must_use]
    pub fn entry(&self) -> Option<Defer> {
        if !self.changes() {
            return None;
        }
        let mut d = Defer::default();
        if let Some(u) = self.user_timeout_ms {
            d.flags = SET_USER_TIMEOUT;
            d.user_timeout_ms = u;
        }
        match self.keepalive {
            KeepalivePlan::Keep | KeepalivePlan::Due => d.kind = DEFER_USER_TIMEOUT,
            KeepalivePlan::Off => d.kind = DEFER_OFF,
            KeepalivePlan::Align {
                idle_s,
                intvl_s,
                remaining,
            } => {
                d.kind = DEFER_ALIGN;
                (d.idle_s, d.intvl_s, d.remaining) = (idle_s, intvl_s, remaining);
            }
        }
        Some(d)
    }
}

/// The `DEFER` entry that brings lifeline's own values (`ours`, as they were in force
/// before the deferral) back; the iterator raises the count past the probes still out.
#[must_use]
pub fn resume(ours: &Keepalive, app: &App) -> Defer {
    Defer {
        kind: DEFER_END,
        idle_s: ours.idle_s,
        intvl_s: ours.intvl_s,
        cnt: ours.cnt,
        user_timeout_ms: ours.user_timeout_ms,
        flags: if app.user_timeout_changed {
            SET_USER_TIMEOUT
        } else {
            0
        },
        ..Defer::default()
    }
}

/// The unanswered probes from which a socket's deferral is due while lifeline only observes:
/// its silent verdict's evidence is in (`--silent-probes` + 2, where the fast probes stop
/// poking), and at least one probe before the socket's own count (`cnt`, the one in force)
/// would abort it. A count that ends the socket before the verdict's probes are in (the
/// application's own, stricter) leaves lifeline nothing to observe: due at the first
/// unanswered probe, which is news too.
#[must_use]
pub fn due_from(silent_probes: u8, cnt: u32) -> u32 {
    let silent = u32::from(silent_probes);
    if cnt <= silent {
        return 1;
    }
    (silent + 2).min(cnt - 1).max(1)
}

/// The deferral for a socket whose application set `app`, as the kernel shows it now.
#[must_use]
pub fn plan(app: &App, info: &TcpInfo) -> Deferral {
    let user_timeout_ms = app
        .user_timeout_changed
        .then(|| app.user_timeout_ms.unwrap_or(0));
    let deadline = app.deadline_s();
    let app_deadline = deadline.map(Duration::from_secs);
    let keepalive = if info.unacked > 0 {
        KeepalivePlan::Keep
    } else {
        idle_plan(app, info, deadline)
    };
    let abort_after = match keepalive {
        KeepalivePlan::Align {
            idle_s,
            intvl_s,
            remaining,
        } => Some(Duration::from_secs(
            u64::from(idle_s) + u64::from(remaining) * u64::from(intvl_s),
        )),
        _ => None,
    };
    // With a user timeout the abort is at the first fire past it, whatever the count: the
    // plan's fires are the application's own instants, so that is its deadline.
    let abort_after = match (keepalive, app.user_timeout_ms) {
        (KeepalivePlan::Align { .. }, Some(u)) if u > 0 => app_deadline,
        _ => abort_after,
    };
    Deferral {
        keepalive,
        user_timeout_ms,
        abort_after,
        app_deadline,
    }
}

fn idle_plan(app: &App, info: &TcpInfo, deadline: Option<u64>) -> KeepalivePlan {
    let (AppKeepalive::On { intvl_s, .. }, Some(d)) = (app.keepalive, deadline) else {
        return KeepalivePlan::Off;
    };
    let quiet_ms = u64::from(info.last_ack_recv_ms.min(info.last_data_recv_ms));
    if quiet_ms >= d * 1000 {
        return KeepalivePlan::Due;
    }
    let room = MAX_KEEPCNT.saturating_sub(u32::from(info.probes) + HEADROOM);
    let user_timeout = app.user_timeout_ms.unwrap_or(0);
    let plan = if user_timeout > 0 {
        at_app_instants(app, quiet_ms, room, Some(user_timeout))
    } else {
        as_often_as_fits(quiet_ms, d, room)
            .filter(|p| matches!(p, KeepalivePlan::Align { intvl_s: v, .. } if *v <= intvl_s))
            .or_else(|| at_app_instants(app, quiet_ms, room, None))
            .or_else(|| as_often_as_fits(quiet_ms, d, room))
    };
    plan.unwrap_or(KeepalivePlan::Off)
}

/// Probes every whole second from the next one on, spaced just enough that the last fire
/// (the abort) lands at or after `d` seconds of silence within the probes left.
fn as_often_as_fits(quiet_ms: u64, d: u64, room: u32) -> Option<KeepalivePlan> {
    let first = quiet_ms / 1000 + 1;
    if room == 0 || first > u64::from(MAX_KEEPIDLE_S) {
        return None;
    }
    let span = d.saturating_sub(first);
    let intvl = span.div_ceil(u64::from(room)).max(1);
    if intvl > u64::from(MAX_KEEPINTVL_S) {
        return None;
    }
    Some(KeepalivePlan::Align {
        idle_s: u32::try_from(first).ok()?,
        intvl_s: u32::try_from(intvl).ok()?,
        remaining: u32::try_from(span.div_ceil(intvl)).ok()?,
    })
}

/// Probes at the application's own instants I + k x V from the next one on, aborting where
/// it would: after its count, or with a user timeout at the first instant (past the first
/// probe) at or after it. A fire at or past the user timeout with a probe out aborts, so with
/// one the instant k = 0 is skipped when it is already that late.
fn at_app_instants(
    app: &App,
    quiet_ms: u64,
    room: u32,
    user_timeout: Option<u32>,
) -> Option<KeepalivePlan> {
    let AppKeepalive::On {
        idle_s,
        intvl_s,
        cnt,
    } = app.keepalive
    else {
        return None;
    };
    let (i, v) = (u64::from(idle_s), u64::from(intvl_s));
    let next = u32::try_from(quiet_ms.saturating_sub(i * 1000).div_ceil(v * 1000)).ok()?;
    let (start, last) = match user_timeout {
        None => (next, cnt),
        Some(u) => {
            let k_u = u32::try_from(first_probe_at_or_after(u, i, v).max(1)).ok()?;
            let skip = next == 0 && i * 1000 >= u64::from(u);
            (if skip { 1 } else { next }, k_u + 1)
        }
    };
    let remaining = last.checked_sub(start)?;
    let first = i + u64::from(start) * v;
    if remaining > room || first > u64::from(MAX_KEEPIDLE_S) {
        return None;
    }
    Some(KeepalivePlan::Align {
        idle_s: u32::try_from(first).ok()?,
        intvl_s,
        remaining,
    })
}

#[cfg(test)]
#[path = "defer_tests.rs"]
mod tests;
