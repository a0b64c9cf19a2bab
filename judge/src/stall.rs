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

use super::{Cookie, Mono, TcpInfo, Verdict};

/// The kernel's answer for one trouble episode, and until when it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    trouble: Mono,
    until: Mono,
    verdict: Verdict,
}

pub struct StallWatch {
    stall: Duration,
    held: HashMap<Cookie, Held>,
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
    pub fn held(&self, cookie: Cookie, trouble: Mono, now: Mono) -> Option<Verdict> {
        self.held
            .get(&cookie)
            .filter(|h| h.trouble == trouble && now < h.until)
            .map(|h| h.verdict)
    }

    /// After a look at a socket whose record has trouble. Nothing outstanding: the episode is
    /// over, and only a new one (new news) can make the socket stalled, so the idle rules
    /// take it from here. Data outstanding and ACKs arriving: it cannot be stalled before no
    /// segment has come for the whole stall timeout. Stalled: no hold, the confirming look
    /// comes next sweep.
    pub fn looked(
        &mut self,
        cookie: Cookie,
        trouble: Mono,
        info: &TcpInfo,
        kernel: Verdict,
        now: Mono,
    ) {
        let (until, verdict) = if info.unacked == 0 {
            (Mono::MAX, Verdict::Idle)
        } else if kernel.is_dead() {
            self.held.remove(&cookie);
            return;
        } else {
            let quiet = Duration::from_millis(u64::from(info.last_ack_recv_ms));
            (now + self.stall.saturating_sub(quiet), kernel)
        };
        self.held.insert(
            cookie,
            Held {
                trouble,
                until,
                verdict,
            },
        );
    }

    pub fn retain(&mut self, live: impl Fn(Cookie) -> bool) {
        self.held.retain(|c, _| live(*c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> Mono {
        Mono::from_secs(s)
    }
    const C: Cookie = Cookie(1);

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
        w.looked(C, t(50), &info(8, 2_000), Verdict::Healthy, t(100));
        assert_eq!(w.held(C, t(50), t(107)), Some(Verdict::Healthy));
        assert_eq!(w.held(C, t(50), t(108)), None, "8 s later: stall possible");
        assert_eq!(w.held(C, t(104), t(101)), None, "a new episode");
    }

    #[test]
    fn nothing_outstanding_is_idle_until_new_trouble_and_stalled_holds_nothing() {
        let mut w = StallWatch::new(Duration::from_secs(10));
        w.looked(C, t(50), &info(0, 60_000), Verdict::Idle, t(100));
        assert_eq!(w.held(C, t(50), t(10_000)), Some(Verdict::Idle));
        w.looked(C, t(50), &info(3, 12_000), Verdict::Stalled, t(101));
        assert_eq!(w.held(C, t(50), t(101)), None, "confirm next sweep");
    }
}
