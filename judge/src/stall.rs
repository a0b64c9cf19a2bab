//! Nominated sockets the kernel found well: when to look again.
//!
//! No callback runs per ACK, so a record's trouble stays in it after the flow recovered: the
//! record only says that a trouble episode began at `trouble_ns` and that nothing newer was
//! seen by a callback. Once the kernel's `tcp_info` has answered for an episode, that answer
//! holds until the earliest moment the socket could be stalled (no segment from the peer for
//! the whole stall timeout), or until a new episode starts (`trouble_ns` changes: the probe
//! starts one whenever `snd_una` moved since its last callback, and pushes it as news). So a
//! recovered flow costs one `tcp_info` read per stall timeout at most, not one per sweep.

use std::time::Duration;

use super::{Mono, TcpInfo, Verdict};

/// The kernel's answer for one trouble episode, and until when it holds.
/// Kept per socket (`SocketState::held`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    trouble: Mono,
    until: Mono,
    verdict: Verdict,
}

impl Held {
    /// The kernel's verdict of the last look, while it holds for this episode; `None`: the
    /// record speaks for itself (a new episode, or the hold ran out).
    #[must_use]
    pub(crate) fn holds(self, trouble: Mono, now: Mono) -> Option<Verdict> {
        (self.trouble == trouble && now < self.until).then_some(self.verdict)
    }
}

pub(crate) struct StallWatch {
    stall: Duration,
}

impl StallWatch {
    #[must_use]
    pub(crate) fn new(stall: Duration) -> Self {
        Self { stall }
    }

    /// After a look at a socket whose record has trouble. Nothing outstanding: the episode is
    /// over, and only a new one (new news) can make the socket stalled, so the idle rules
    /// take it from here. Data outstanding and ACKs arriving: it cannot be stalled before no
    /// segment has come for the whole stall timeout. Stalled: no hold, the confirming look
    /// comes next sweep.
    pub(crate) fn looked(
        &self,
        held: &mut Option<Held>,
        trouble: Mono,
        info: &TcpInfo,
        kernel: Verdict,
        now: Mono,
    ) {
        let (until, verdict) = if info.unacked == 0 {
            (Mono::MAX, Verdict::Idle)
        } else if kernel.is_dead() {
            *held = None;
            return;
        } else {
            let quiet = Duration::from_millis(u64::from(info.last_ack_recv_ms));
            (now + self.stall.saturating_sub(quiet), kernel)
        };
        *held = Some(Held {
            trouble,
            until,
            verdict,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> Mono {
        Mono::from_secs(s)
    }
    fn held(h: Option<Held>, trouble: Mono, now: Mono) -> Option<Verdict> {
        h.and_then(|h| h.holds(trouble, now))
    }

    fn info(unacked: u32, last_ack_ms: u32) -> TcpInfo {
        TcpInfo {
            state: 1,
            unacked,
            last_ack_recv_ms: last_ack_ms,
            ..TcpInfo::default()
        }
    }

    #[test]
    fn a_healthy_answer_holds_until_a_stall_is_possible_or_a_new_episode() {
        let w = StallWatch::new(Duration::from_secs(10));
        let mut h = None;
        w.looked(&mut h, t(50), &info(8, 2_000), Verdict::Healthy, t(100));
        assert_eq!(held(h, t(50), t(107)), Some(Verdict::Healthy));
        assert_eq!(held(h, t(50), t(108)), None, "8 s later: stall possible");
        assert_eq!(held(h, t(104), t(101)), None, "a new episode");
    }

    #[test]
    fn nothing_outstanding_is_idle_until_new_trouble_and_stalled_holds_nothing() {
        let w = StallWatch::new(Duration::from_secs(10));
        let mut h = None;
        w.looked(&mut h, t(50), &info(0, 60_000), Verdict::Idle, t(100));
        assert_eq!(held(h, t(50), t(10_000)), Some(Verdict::Idle));
        w.looked(&mut h, t(50), &info(3, 12_000), Verdict::Stalled, t(101));
        assert_eq!(held(h, t(50), t(101)), None, "confirm next sweep");
    }
}
