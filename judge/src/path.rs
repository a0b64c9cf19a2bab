//! A blip is not a death: when the whole path to the endpoint was found down (the guard held
//! a batch: no address accepted a connection; or a peer probe found its peer and every other
//! address silent) and then back, the unanswered transmissions a socket collected while it
//! was down say nothing about the socket, only about the path. A socket still silent across
//! the return is judged on evidence gathered after it: its counts at its first look after
//! the return are its baseline, and a stall or silence verdict needs `FRESH_RTOS` more
//! retransmission timeouts, or `FRESH_PROBES` more keepalive probes, unanswered on top of the
//! rule's own count. Anything from its peer (`evidence::life`) ends the baseline: its
//! counters were reset by the kernel and the ordinary rules apply.
//!
//! Why these counts: after the return the path is known to work (a fresh handshake
//! succeeded), so each further unanswered transmission of the socket is evidence against the
//! flow itself, at the odds of "The arithmetic" (docs/ARCHITECTURE.md): with q the chance a
//! round trip fails, a live flow collects 2 in a row with q² (1 % at 5 % loss each way, 4e-4
//! at 1 %), 3 probes with q³. A retransmission after the return is answered at once by a live
//! peer (it is the head the peer is waiting for), and the RTO that follows is at least 200 ms
//! on a backed-off timer: 2 RTOs are two round trips given seconds each. A keepalive probe
//! every second is cheap, so silence asks for 3.

use super::{Mono, TcpInfo, Verdict};

/// Retransmission timeouts after the path's return, on top of the socket's count then.
pub const FRESH_RTOS: u8 = 2;
/// Keepalive probes after the path's return, likewise.
pub const FRESH_PROBES: u8 = 3;

/// The socket's counts at its first look after a return (kept per socket,
/// `SocketState::base`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Base {
    back: Mono,
    retransmits: u8,
    probes: u8,
}

#[derive(Default)]
pub(crate) struct PathWatch {
    /// Found down, not yet back: since when.
    pub down: Option<Mono>,
    /// The latest return.
    pub back: Option<Mono>,
    /// Returns so far: a kill decided in an earlier epoch is earned again.
    pub epoch: u64,
}

impl PathWatch {
    /// The path was found down at `at` (the earliest moment known: a probe's start).
    pub(crate) fn down(&mut self, at: Mono) {
        self.down = Some(self.down.map_or(at, |d| d.min(at)));
    }

    /// The path was found working at `at`. Returns whether it was down: a return.
    pub(crate) fn back(&mut self, at: Mono) -> bool {
        match self.down {
            Some(d) if at >= d => {
                self.down = None;
                self.back = Some(self.back.map_or(at, |b| b.max(at)));
                self.epoch += 1;
                true
            }
            _ => false,
        }
    }

    /// The verdict once the path's last return is taken into account: a dead verdict of a
    /// socket silent across the return stands only on fresh evidence.
    pub(crate) fn fresh(
        &self,
        base: &mut Option<Base>,
        info: &TcpInfo,
        life: Mono,
        kernel: Verdict,
    ) -> Verdict {
        let Some(back) = self.back.filter(|b| life < *b) else {
            *base = None;
            return kernel;
        };
        let b = base.get_or_insert(Base {
            back,
            retransmits: info.retransmits,
            probes: info.probes,
        });
        if b.back != back {
            *b = Base {
                back,
                retransmits: info.retransmits,
                probes: info.probes,
            };
        }
        let fresh = match kernel {
            Verdict::Stalled => info.retransmits >= b.retransmits.saturating_add(FRESH_RTOS),
            Verdict::Silent => info.probes >= b.probes.saturating_add(FRESH_PROBES),
            _ => true,
        };
        if fresh { kernel } else { Verdict::Suspect }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn info(retransmits: u8, probes: u8) -> TcpInfo {
        TcpInfo {
            state: 1,
            retransmits,
            probes,
            ..TcpInfo::default()
        }
    }

    #[test]
    fn a_return_is_a_transition_and_only_after_down() {
        let t0 = Mono::from_secs(100);
        let mut p = PathWatch::default();
        assert!(!p.back(t0), "never down: no return");
        p.down(t0 + Duration::from_secs(2));
        p.down(t0 + Duration::from_secs(1));
        assert_eq!(p.down, Some(t0 + Duration::from_secs(1)), "the earliest");
        assert!(!p.back(t0), "working before it went down says nothing");
        assert!(p.back(t0 + Duration::from_secs(3)));
        assert!(!p.back(t0 + Duration::from_secs(4)), "once");
        assert_eq!(p.back, Some(t0 + Duration::from_secs(3)));
    }

    #[test]
    fn silent_across_the_return_needs_fresh_counts_and_life_ends_it() {
        let t0 = Mono::from_secs(100);
        let s = Duration::from_secs;
        let mut p = PathWatch::default();
        let (mut one, mut two) = (None, None);
        assert_eq!(
            p.fresh(&mut one, &info(9, 0), t0, Verdict::Stalled),
            Verdict::Stalled,
            "no return: the rule's word"
        );
        p.down(t0 + s(1));
        assert!(p.back(t0 + s(4)));
        assert_eq!(
            p.fresh(&mut one, &info(9, 0), t0, Verdict::Stalled),
            Verdict::Suspect
        );
        assert!(one.is_some(), "awaits fresh evidence");
        assert_eq!(
            p.fresh(&mut one, &info(10, 0), t0, Verdict::Stalled),
            Verdict::Suspect
        );
        assert_eq!(
            p.fresh(&mut one, &info(11, 0), t0, Verdict::Stalled),
            Verdict::Stalled
        );
        assert_eq!(
            p.fresh(&mut two, &info(0, 14), t0, Verdict::Silent),
            Verdict::Suspect
        );
        assert_eq!(
            p.fresh(&mut two, &info(0, 16), t0, Verdict::Silent),
            Verdict::Suspect
        );
        assert_eq!(
            p.fresh(&mut two, &info(0, 17), t0, Verdict::Silent),
            Verdict::Silent
        );
        assert_eq!(
            p.fresh(&mut one, &info(8, 0), t0 + s(5), Verdict::Stalled),
            Verdict::Stalled,
            "heard after the return: ordinary rules"
        );
        assert!(one.is_none());
        p.down(t0 + s(6));
        assert!(p.back(t0 + s(9)));
        assert_eq!(
            p.fresh(&mut two, &info(0, 20), t0, Verdict::Silent),
            Verdict::Suspect,
            "a second return takes a new baseline"
        );
    }
}
