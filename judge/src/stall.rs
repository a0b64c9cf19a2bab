//! Nominated sockets the kernel found well: when to look again.
//!
//! No callback runs per ACK, so a record's trouble stays in it after the flow recovered: the
//! record only says that a trouble episode began at `trouble_ns` and that nothing newer was
//! seen by a callback. Once the kernel's `tcp_info` has answered for an episode, that answer
//! holds until the earliest moment the socket could be stalled (no segment from the peer for
//! the whole stall timeout), or until a new episode starts (`trouble_ns` changes: the probe
//! starts one whenever `snd_una` moved since its last callback, and pushes it as news). So a
//! recovered flow costs one `tcp_info` read per stall timeout at most, not one per sweep.

use std::{collections::HashMap, time::Duration};

use super::{TcpInfo, Verdict};

/// The kernel's answer for one trouble episode, and until when it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    trouble_ns: u64,
    until_ns: u64,
    verdict: Verdict,
}

pub struct StallWatch {
    stall: Duration,
    held: HashMap<u64, Held>,
}

impl StallWatch {
    #[must_use]
    pub fn new(stall: Duration) -> Self {
        Self {
            stall,
            held: HashMap::new(),
        }
    }

    /// The kernel's verdict of the last look, while it holds for this episode; `None`: the
    /// record speaks for itself (no look yet, a new episode, or the hold ran out).
    #[must_use]
    pub fn held(&self, cookie: u64, trouble_ns: u64, now_ns: u64) -> Option<Verdict> {
        self.held
            .get(&cookie)
            .filter(|h| h.trouble_ns == trouble_ns && now_ns < h.until_ns)
            .map(|h| h.verdict)
    }

    /// After a look at a socket whose record has trouble. Nothing outstanding: the episode is
    /// over, and only a new one (new news) can make the socket stalled, so the idle rules
    /// take it from here. Data outstanding and ACKs arriving: it cannot be stalled before no
    /// segment has come for the whole stall timeout. Stalled: no hold, the confirming look
    /// comes next sweep.
    pub fn looked(
        &mut self,
        cookie: u64,
        trouble_ns: u64,
        info: &TcpInfo,
        kernel: Verdict,
        now_ns: u64,
    ) {
        let (until_ns, verdict) = if info.unacked == 0 {
            (u64::MAX, Verdict::Idle)
        } else if kernel.is_dead() {
            self.held.remove(&cookie);
            return;
        } else {
            let quiet = Duration::from_millis(u64::from(info.last_ack_recv_ms));
            let wait = self.stall.saturating_sub(quiet);
            let wait = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
            (now_ns.saturating_add(wait), kernel)
        };
        self.held.insert(
            cookie,
            Held {
                trouble_ns,
                until_ns,
                verdict,
            },
        );
    }

    pub fn retain(&mut self, live: impl Fn(u64) -> bool) {
        self.held.retain(|c, _| live(*c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

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
        let mut w = StallWatch::new(Duration::from_secs(10));
        w.looked(1, 50 * S, &info(8, 2_000), Verdict::Healthy, 100 * S);
        assert_eq!(w.held(1, 50 * S, 107 * S), Some(Verdict::Healthy));
        assert_eq!(
            w.held(1, 50 * S, 108 * S),
            None,
            "8 s later: stall possible"
        );
        assert_eq!(w.held(1, 104 * S, 101 * S), None, "a new episode");
    }

    #[test]
    fn nothing_outstanding_is_idle_until_new_trouble_and_stalled_holds_nothing() {
        let mut w = StallWatch::new(Duration::from_secs(10));
        w.looked(1, 50 * S, &info(0, 60_000), Verdict::Idle, 100 * S);
        assert_eq!(w.held(1, 50 * S, 10_000 * S), Some(Verdict::Idle));
        w.looked(1, 50 * S, &info(3, 12_000), Verdict::Stalled, 101 * S);
        assert_eq!(w.held(1, 50 * S, 101 * S), None, "confirm next sweep");
    }
}
