//! Verdicts: is a watched socket healthy, idle, suspect, stalled or silent?
//!
//! Two witnesses must agree before anything is killed. The probe's record (kept by
//! `sock_ops` callbacks) nominates a socket: its trouble episode has had enough RTOs in a
//! row, by the count or the time rule (`stall_rule.rs`). The kernel's current `tcp_info`,
//! read through `sock_diag` at decision time, confirms it: data is still unacknowledged,
//! `tcpi_retransmits` has as many RTOs in a row, and (time rule) no ACK of any kind arrived
//! for `stall_timeout`. A slow peer still ACKs, a lossy path still makes progress (which
//! zeroes the count), an idle socket has nothing outstanding: none of them pass.

use std::time::Duration;

use serde::Serialize;

use super::{Mono, Record, Silence, Stall, TcpInfo};

const TCP_ESTABLISHED: u8 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// ACKs arrive, or recently did.
    Healthy,
    /// Nothing outstanding and nothing recent: an idle connection (not a fault).
    Idle,
    /// Data went unanswered (retransmission or RTO) but not yet for `stall_timeout`.
    Suspect,
    /// Unacknowledged data, and `--stall-unanswered` transmissions in a row unanswered (or
    /// no ACK for `stall_timeout` with as many as fit in it), or, written after unanswered
    /// keepalive probes, the silent rule's count of probes and RTOs together (`run.rs`).
    Stalled,
    /// Nothing outstanding, keepalive probes unanswered and nothing at all received from
    /// the peer for at least `silent_timeout`: a dead peer behind an idle connection.
    Silent,
}

impl Verdict {
    pub const ALL: [Self; 5] = [
        Self::Healthy,
        Self::Idle,
        Self::Suspect,
        Self::Stalled,
        Self::Silent,
    ];

    /// The name in status, metrics and logs (as serialised).
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Healthy => "healthy",
            Self::Idle => "idle",
            Self::Suspect => "suspect",
            Self::Stalled => "stalled",
            Self::Silent => "silent",
        }
    }

    /// Position in `ALL`.
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The verdicts that lead to a kill (once confirmed).
    #[must_use]
    pub const fn is_dead(self) -> bool {
        matches!(self, Self::Stalled | Self::Silent)
    }
}

/// The probe's view, from the record alone.
#[must_use]
pub fn from_record(s: &Record, now: Mono, stall: Stall) -> Verdict {
    if !s.is_established() {
        return Verdict::Healthy;
    }
    if let (Some(trouble), true) = (s.trouble, s.packets_out > 0) {
        // Trouble starts at the first retransmission, at least one RTO after the data
        // left, so this under-estimates how long it has been unanswered: conservative.
        let quiet = (now - trouble).min(now - s.last_ack);
        if stall.is_stalled(s.rto_count, quiet) {
            return Verdict::Stalled;
        }
        return Verdict::Suspect;
    }
    if now < quiet_at(s, stall.after) {
        Verdict::Healthy
    } else {
        Verdict::Idle
    }
}

/// Whether time alone can turn the record stalled (`from_record`): data outstanding in a
/// trouble episode with the RTOs the stall rule needs. With fewer, only the next RTO can,
/// and the probe sends every RTO as news.
#[must_use]
pub(crate) fn stalls_in_time(s: &Record, stall: Stall) -> bool {
    s.is_established()
        && s.trouble.is_some()
        && s.packets_out > 0
        && stall.is_stalled(s.rto_count, Duration::MAX)
}

/// When the record's last ACK progress is `stall` old: from then on, with nothing wrong, it
/// is idle rather than healthy.
fn quiet_at(s: &Record, stall: Duration) -> Mono {
    s.last_ack + stall
}

/// The moment a record with no trouble episode turns from healthy to idle by `from_record`'s
/// rule, with no news in between (`None` in a trouble episode: its looks decide). The tally
/// visits the socket again then, so the counts follow.
#[must_use]
pub fn turns_idle_at(s: &Record, stall: Duration) -> Option<Mono> {
    s.trouble.is_none().then(|| quiet_at(s, stall))
}

/// The kernel's view, from `tcp_info` alone (used to confirm, and for sockets the
/// probe could not arm). `silence`: `None` when keepalive is off. Data outstanding is
/// stalled by the stall rule, or by the silent rule's count over keepalive probes and RTOs
/// together when it went out after unanswered probes (`run.rs`).
///
/// `tcpi_probes` counts keepalive (or zero-window) probes sent since the peer last
/// answered, and `tcpi_last_ack_recv` ages the last segment of any kind from it: `tcp_ack()`
/// resets both (<https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>).
#[must_use]
pub fn from_info(i: &TcpInfo, stall: Stall, silence: Option<Silence>) -> Verdict {
    if i.state != TCP_ESTABLISHED {
        return Verdict::Healthy;
    }
    let silent = Duration::from_millis(u64::from(i.last_ack_recv_ms));
    let stalled = stall.is_stalled(u32::from(i.retransmits), silent);
    if i.unacked > 0 && (stalled || super::run::confirms(i, silence)) {
        Verdict::Stalled
    } else if i.unacked > 0 && (i.retransmits > 0 || i.backoff > 0) {
        Verdict::Suspect
    } else if i.unacked == 0 && i.probes > 0 {
        if silence.is_some_and(|s| i.probes >= s.probes && silent >= s.after) {
            Verdict::Silent
        } else {
            Verdict::Suspect
        }
    } else if silent < stall.after {
        Verdict::Healthy
    } else {
        Verdict::Idle
    }
}

/// What `lifeline status` shows of a socket at the moment it is asked, from the kernel's
/// `tcp_info` read then; `None` once it is no longer ESTABLISHED (closing: no rule judges it,
/// and it is not healthy). Trouble and silence are `from_info`'s. A socket with nothing wrong
/// is healthy while data moved, either way, within the stall timeout, and idle otherwise:
/// `from_record`'s rule (ACK progress within the stall timeout) read off the kernel's clocks
/// of the last data sent and received, so the ACKs of keepalive probes do not make an idle
/// socket healthy and a busy one is never idle. (With nothing outstanding, the last data
/// sent was acknowledged after it left: its age bounds the age of the last ACK progress.)
#[must_use]
pub fn at_request(i: &TcpInfo, stall: Stall, silence: Option<Silence>) -> Option<Verdict> {
    if i.state != TCP_ESTABLISHED {
        return None;
    }
    let kernel = from_info(i, stall, silence);
    if kernel != Verdict::Healthy || i.unacked > 0 {
        return Some(kernel);
    }
    let moved = Duration::from_millis(u64::from(i.last_data_sent_ms.min(i.last_data_recv_ms)));
    Some(if moved < stall.after {
        Verdict::Healthy
    } else {
        Verdict::Idle
    })
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
