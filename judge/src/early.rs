//! The early migration: an endpoint socket whose peer has left the endpoint's address set
//! (leaving or orphaned) *and* whose own last round trip failed is moved at once, within
//! `EARLY_JITTER`, instead of at its moment of `--migrate-spread` after the grace. This is
//! what follows a rotated load balancer within seconds: its old address goes silent as DNS
//! moves, the first unanswered keepalive probe makes the agent re-resolve (the agent's
//! part), and the socket, now to a left peer and unanswered, is migrated here.
//!
//! Why it cannot cost a false kill: the socket was going to be migrated anyway within the
//! spread once its peer stayed out of the answers, so moving it now only gives up the fleet
//! spread, and only sockets whose own round trip failed give it up. A left peer that still
//! answers keeps the slow migration. It still passes the guard (a current address must
//! accept) and the kill budget like every kill.

use std::time::Duration;

use super::{Cookie, Mono, Record, Seed, TcpInfo};

/// An early migration happens within this of the look that found it due: enough to keep a
/// node's sockets of one endpoint from re-dialling in the same millisecond, small beside the
/// seconds the rotation already took.
pub(crate) const EARLY_JITTER: Duration = Duration::from_millis(200);

/// Which failed round trip of a socket whose peer left made its migration early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// Idle, and a keepalive probe has been out unanswered for longer than the kernel would
    /// wait for any segment's answer (a healthy peer answers within one round trip).
    Unanswered,
    /// Data outstanding and a retransmission timeout fired without any ACK progress since.
    Retransmitting,
}

impl Trouble {
    /// The evidence as the decision's reason shows it.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Unanswered => "unanswered",
            Self::Retransmitting => "retransmitting",
        }
    }
}

/// Whether the kernel's view shows a failed round trip of this socket.
///
/// `tcpi_retransmits` is `icsk_retransmits`: RTO retransmissions of the head since the last
/// ACK that moved `snd_una` (reset in `tcp_ack()`,
/// <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>); a fast
/// retransmission does not count, it needs the peer's duplicate ACKs. `tcpi_probes` is
/// `icsk_probes_out`, which any ACK resets: a healthy socket shows 1 only while a probe is in
/// flight, when nothing has come from the peer for IDLE plus a round trip. The probe is
/// sent IDLE after the last ACK (`tcp_keepalive_timer()`,
/// <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>), so an RTO and the
/// timer's slack beyond that (`patience_ms`) is a round trip no healthy path takes.
#[must_use]
pub(crate) fn trouble(
    info: &TcpInfo,
    rec: &Record,
    want: &lifeline_common::Keepalive,
) -> Option<Trouble> {
    if info.unacked > 0 && info.retransmits > 0 {
        return Some(Trouble::Retransmitting);
    }
    let ka = in_force(rec, want);
    let due_ms = unanswered_after_ms(ka, info);
    (info.unacked == 0 && info.probes > 0 && ka.idle_s > 0 && info.last_ack_recv_ms >= due_ms)
        .then_some(Trouble::Unanswered)
}

/// The keepalive in force on the socket: what the probe armed, else the agent's wish.
fn in_force<'a>(
    rec: &'a Record,
    want: &'a lifeline_common::Keepalive,
) -> &'a lifeline_common::Keepalive {
    if rec.keepalive.idle_s == 0 {
        want
    } else {
        &rec.keepalive
    }
}

/// The keepalive timer's lateness at most: a 1 s timer sits in the timer wheel's third level,
/// whose 64-jiffy granularity makes it fire up to 64 ms late at HZ=1000 (80 ms at HZ=100,
/// second level; `calc_index()` in
/// <https://github.com/torvalds/linux/blob/v6.18/kernel/time/timer.c>).
const TIMER_SLACK_MS: u32 = 100;

/// The kernel's floor for an RTO (`TCP_RTO_MIN`).
const RTO_MIN_MS: u32 = 200;

/// How long a keepalive probe may go unanswered before it is overdue: the socket's RTO (the
/// kernel's own patience for a segment, `tcpi_rto`: srtt + 4 rttvar, at least 200 ms), the
/// timer's slack, and never more than half an interval (the next probe would be its answer's
/// deadline). It was half an interval for every path: 500 ms at lifeline's 1 s interval, where
/// a LAN's RTO allows 300 ms, which is how much sooner a rotated balancer's socket is followed.
fn patience_ms(ka: &lifeline_common::Keepalive, info: &TcpInfo) -> u32 {
    let rto_ms = (info.rto_us / 1000).max(RTO_MIN_MS);
    rto_ms
        .saturating_add(TIMER_SLACK_MS)
        .min(ka.intvl_s.saturating_mul(500))
}

/// Since the last ACK, when an idle socket's keepalive probe is overdue: IDLE plus its
/// patience.
fn unanswered_after_ms(ka: &lifeline_common::Keepalive, info: &TcpInfo) -> u32 {
    ka.idle_s.saturating_mul(1000) + patience_ms(ka, info)
}

/// For an idle socket whose peer left and that shows no trouble yet: how soon its probe is
/// overdue (`trouble` would say `Unanswered`), so the loop looks then. Without it the look
/// came at the socket's own next keepalive news, an interval later (its probe's answer is
/// overdue at the next probe): a rotated balancer's sockets that were not the first to
/// notice moved up to 0.5 s late. While the peer still answers this is one look per
/// keepalive cycle, and only for sockets to an address that left the answers.
#[must_use]
pub(crate) fn overdue_in(
    info: &TcpInfo,
    rec: &Record,
    want: &lifeline_common::Keepalive,
) -> Option<Duration> {
    let ka = in_force(rec, want);
    let due_ms = unanswered_after_ms(ka, info);
    (info.unacked == 0 && ka.idle_s > 0 && info.last_ack_recv_ms < due_ms)
        .then(|| Duration::from_millis(u64::from(due_ms - info.last_ack_recv_ms)))
}

/// For a socket whose peer left: when its early migration is due (`None`: no failed round
/// trip, nothing early). The moment (`slot`, the socket's `SocketState::early`) is fixed at
/// the first look that found the trouble, and forgotten when a look finds it over.
pub(super) fn early_due(
    seed: Seed,
    cookie: Cookie,
    slot: &mut Option<Mono>,
    trouble: Option<Trouble>,
    at: Mono,
) -> Option<(Trouble, Mono)> {
    let Some(t) = trouble else {
        *slot = None;
        return None;
    };
    let due = *slot.get_or_insert_with(|| at + seed.jitter(cookie, EARLY_JITTER));
    Some((t, due))
}
