//! The stall rule, in transmissions: what separates a dead flow from a lossy live one is how
//! many transmissions in a row got no answer. Each RTO that fires is one more (the kernel's
//! `icsk_retransmits`, `tcpi_retransmits`: consecutive RTOs since `snd_una` last moved, zeroed
//! by `tcp_ack()` on progress,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>). Under random loss p
//! each way a transmission goes unanswered with q = 1 - (1-p)^2, so k in a row with q^k.
//!
//! Two ways to a stall, each needing at least 6 unanswered transmissions at the defaults:
//! - **count**: `--stall-unanswered` (8) RTOs in a row. With linear timeouts on the socket
//!   (Linux 6.1, `features::LINEAR_TIMEOUTS`) they come every RTO (~200 ms), so about 2.4 s
//!   after the data left; with exponential backoff they would take 51 s, and
//! - **time**: no ACK of any kind for `--stall-timeout` (10 s) *and* as many RTOs in a row as
//!   the kernel's fastest backoff (200 ms, doubling) fits into it: 5 for 10 s, i.e. the 6
//!   transmissions today's arithmetic counts. A bulk flow backed off to RTOs of 30-49 s that
//!   goes 10 s without an ACK has had one or two unanswered transmissions, not six: it is
//!   left alone (a fresh connection would start without backoff, but killing it would trade
//!   a connection that still moves for one that may not: the odds of the rule decide, not
//!   the clock).

use std::time::Duration;

/// The kernel's minimum RTO (`TCP_RTO_MIN`, 200 ms) where the fastest backoff starts.
const RTO_MIN: Duration = Duration::from_millis(200);

/// When unacknowledged data makes a socket stalled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// `--stall-timeout`: the time rule's silence.
    pub after: Duration,
    /// `--stall-unanswered`: the count rule's RTOs in a row; 0 turns it (and linear timeouts)
    /// off.
    pub unanswered: u8,
}

impl Stall {
    #[must_use]
    pub const fn new(after: Duration, unanswered: u8) -> Self {
        Self { after, unanswered }
    }

    /// The RTOs in a row the time rule needs: as many as fire within `after` when every RTO
    /// starts from the 200 ms floor and doubles (200 ms, 600 ms, 1.4 s, 3.0 s, 6.2 s, ...).
    #[must_use]
    pub fn time_rtos(self) -> u32 {
        let mut k = 0;
        // Bounded: 2^16 x 200 ms is far past any stall timeout.
        while k < 16 && RTO_MIN * ((1 << (k + 1)) - 1) <= self.after {
            k += 1;
        }
        k
    }

    /// Whether `rtos` RTOs in a row and `quiet` without any ACK make a stall (data being
    /// outstanding is the caller's part).
    #[must_use]
    pub fn is_stalled(self, rtos: u32, quiet: Duration) -> bool {
        let count = self.unanswered > 0 && rtos >= u32::from(self.unanswered);
        count || quiet >= self.after && rtos >= self.time_rtos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_rule_needs_what_the_fastest_backoff_fits() {
        let s = |secs| Stall::new(Duration::from_secs(secs), 8);
        assert_eq!(s(10).time_rtos(), 5, "0.2, 0.6, 1.4, 3.0, 6.2 s");
        assert_eq!(s(4).time_rtos(), 4, "the fourth at 3.0 s");
        assert_eq!(s(3).time_rtos(), 4, "3.0 s fits exactly");
        assert_eq!(s(60).time_rtos(), 8);
    }

    #[test]
    fn count_or_time_with_enough_transmissions() {
        let s = Stall::new(Duration::from_secs(10), 8);
        let ms = Duration::from_millis;
        assert!(
            s.is_stalled(8, ms(2_400)),
            "8 RTOs in a row, linear timeouts"
        );
        assert!(!s.is_stalled(7, ms(2_000)));
        assert!(
            s.is_stalled(5, ms(10_000)),
            "exponential backoff: 6 transmissions by 10 s"
        );
        assert!(
            !s.is_stalled(1, ms(30_000)),
            "a bulk flow backed off to a 30 s RTO: one unanswered transmission is no stall"
        );
        let time_only = Stall::new(Duration::from_secs(10), 0);
        assert!(!time_only.is_stalled(12, ms(3_000)));
        assert!(time_only.is_stalled(5, ms(10_000)));
    }
}
