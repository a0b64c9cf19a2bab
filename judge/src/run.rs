//! One run of unanswered transmissions, whatever they carried. An idle socket's keepalive
//! probes go unanswered; then its application writes (a heartbeat, a request) and the kernel
//! stops probing while data is outstanding (`tcp_keepalive_timer()` reschedules while
//! `packets_out` or the write queue is not empty,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>), so the silent rule
//! can no longer be met, and the stall rule starts counting RTOs from zero. The peer has
//! answered none of it: the probes and the data's retransmissions are one run since its last
//! sign of life. The kernel keeps both counts through it: `icsk_probes_out` is zeroed only by
//! an ACK (`tcp_ack()`,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>) or a zero-window
//! probe timer with nothing left to probe, never by an RTO; `icsk_retransmits` counts the
//! RTOs since `snd_una` last moved.
//!
//! The run is judged as the silent rule judges probes: `Silence::probes` transmissions in a
//! row sent since the peer last answered (`tcpi_probes` counts probes sent: the silent rule's
//! last one has just left), and nothing from the peer for `Silence::after`. Here they are the
//! probes, the data's first transmission and its retransmissions (one per RTO). The odds are
//! the silent rule's: each transmission of the run would have been answered at once by a live
//! peer.
//! Without it, a socket whose application wrote during its keepalive phase waited for eight
//! fresh RTOs (about 1.9 s with linear timeouts) on top of the probes it had already seen
//! unanswered.

use std::time::Duration;

use super::{Mono, Record, Silence, TcpInfo};

/// The kernel's witness: data outstanding, at least one RTO of it after at least one
/// unanswered keepalive probe, and together (the probes, the data's first transmission, its
/// RTOs) as many as the silent rule asks, with nothing from the peer for its timeout.
#[must_use]
pub(crate) fn confirms(i: &TcpInfo, silence: Option<Silence>) -> bool {
    let Some(s) = silence else {
        return false;
    };
    let quiet = Duration::from_millis(u64::from(i.last_ack_recv_ms));
    i.unacked > 0
        && i.probes > 0
        && i.retransmits > 0
        && u32::from(i.probes) + 1 + u32::from(i.retransmits) >= u32::from(s.probes)
        && quiet >= s.after
}

/// The unanswered keepalive probes a look at the socket saw (`tcpi_probes`), and when.
/// Kept per socket (`SocketState::probes_seen`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProbesSeen {
    pub probes: u8,
    pub at: Mono,
}

impl ProbesSeen {
    /// The run's transmissions once `rtos` RTOs of data written after these probes fired.
    fn probes_then(self, rtos: u32) -> u32 {
        u32::from(self.probes) + 1 + rtos
    }
}

/// The record's nomination of a socket whose last look saw keepalive probes unanswered and
/// which has since written data the kernel had to retransmit: once when its trouble episode
/// is newer than that look (the probe hook pushes news only at the first and the last few
/// probes, so the count seen may be old: this look reads the one the run continues from),
/// and then when the episode's RTOs on top of the probes seen reach the silent rule's count.
/// Optimistic by design: a peer that answered since that look zeroed the kernel's count,
/// and `confirms` then finds no run.
#[must_use]
pub(crate) fn nominates(rec: &Record, seen: Option<ProbesSeen>, silence: Option<Silence>) -> bool {
    let (Some(s), Some(seen), Some(trouble)) = (silence, seen, rec.trouble) else {
        return false;
    };
    rec.packets_out > 0
        && seen.probes > 0
        && rec.rto_count > 0
        && (seen.at < trouble || seen.probes_then(rec.rto_count) >= u32::from(s.probes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SILENCE: Option<Silence> = Some(Silence {
        after: Duration::from_millis(2_100),
        probes: 12,
    });

    fn info(probes: u8, retransmits: u8, unacked: u32, quiet_ms: u32) -> TcpInfo {
        TcpInfo {
            state: 1,
            probes,
            retransmits,
            unacked,
            last_ack_recv_ms: quiet_ms,
            ..TcpInfo::default()
        }
    }

    #[test]
    fn probes_then_rtos_are_one_run() {
        assert!(
            confirms(&info(9, 2, 1, 3_000), SILENCE),
            "9 probes, the data, 2 RTOs"
        );
        assert!(!confirms(&info(9, 1, 1, 3_000), SILENCE), "11 in a row");
        assert!(
            !confirms(&info(9, 3, 1, 2_000), SILENCE),
            "the silent timeout has not passed"
        );
        assert!(
            !confirms(&info(0, 11, 1, 3_000), SILENCE),
            "no probe: the stall rule's alone"
        );
        assert!(
            !confirms(&info(12, 0, 1, 3_000), SILENCE),
            "no RTO yet: the data may still be answered"
        );
        assert!(
            !confirms(&info(12, 3, 0, 3_000), SILENCE),
            "nothing outstanding: the silent rule's"
        );
        assert!(!confirms(&info(9, 3, 1, 3_000), None), "keepalive off");
    }

    #[test]
    fn the_record_nominates_on_its_rtos_and_the_probes_last_seen() {
        let rec = |rto_count, packets_out| Record {
            state: crate::TcpState::Established,
            trouble: Some(Mono::from_secs(10)),
            rto_count,
            packets_out,
            ..Record::default()
        };
        let seen = |probes, at_s| {
            Some(ProbesSeen {
                probes,
                at: Mono::from_secs(at_s),
            })
        };
        assert!(nominates(&rec(2, 1), seen(9, 11), SILENCE));
        assert!(!nominates(&rec(1, 1), seen(9, 11), SILENCE), "11 in a row");
        assert!(
            nominates(&rec(1, 1), seen(1, 9), SILENCE),
            "seen before the episode: a look reads the count it continues from"
        );
        assert!(!nominates(&rec(3, 0), seen(9, 11), SILENCE), "nothing out");
        assert!(!nominates(&rec(11, 1), seen(0, 11), SILENCE), "no probe");
        assert!(!nominates(&rec(11, 1), None, SILENCE), "never looked at");
        assert!(
            !nominates(
                &Record {
                    trouble: None,
                    ..rec(3, 1)
                },
                seen(9, 9),
                SILENCE
            ),
            "no episode"
        );
        assert!(!nominates(&rec(3, 1), seen(9, 11), None));
    }
}
