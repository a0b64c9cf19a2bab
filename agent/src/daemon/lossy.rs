//! Peers whose fast phases ended with an answer lately: on those paths a keepalive probe (or
//! its answer) gets lost now and then, so one unanswered probe says little. The agent opens a
//! phase at an endpoint socket's overdue look (`fast.rs`, `hasten`) only where that has not
//! happened for `LOSSY_FOR`; elsewhere it waits for the kernel's second probe, which on such a
//! path is usually answered and closes the phase with one `sock_diag` read. Measured at the
//! usual load (20 idle endpoint watches, 5 % loss each way): opening at every overdue look cost
//! a TCP iterator pass per lost first probe, 1.03 % of a core against 0.48 % without.

use std::{collections::HashMap, net::IpAddr, time::Duration};

use crate::judge::Mono;

/// How long a phase that ended answered keeps its peer's first unanswered probes at the
/// kernel's cadence.
pub(super) const LOSSY_FOR: Duration = Duration::from_mins(1);

#[derive(Debug, Default)]
pub(super) struct Lossy {
    /// The last phase that ended answered, per peer address; none older than `LOSSY_FOR`
    /// after the latest (pruned at each new one), so at most one entry per watched peer.
    answered: HashMap<IpAddr, Mono>,
}

impl Lossy {
    /// A phase of a socket to `peer` ended at `at` with its probe answered.
    pub(super) fn answered(&mut self, peer: IpAddr, at: Mono) {
        self.answered.retain(|_, t| at - *t < LOSSY_FOR);
        self.answered.insert(peer, at);
    }

    /// Whether a phase to `peer` ended answered within `LOSSY_FOR` before `at`.
    #[must_use]
    pub(super) fn recent(&self, peer: IpAddr, at: Mono) -> bool {
        self.answered
            .get(&peer)
            .is_some_and(|t| at - *t < LOSSY_FOR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answered_phase_marks_its_peer_for_a_minute_and_only_its_peer() {
        let mut l = Lossy::default();
        let (a, b) = (IpAddr::from([192, 0, 2, 10]), IpAddr::from([192, 0, 2, 11]));
        let t = Mono::from_secs(100);
        assert!(!l.recent(a, t));
        l.answered(a, t);
        assert!(l.recent(a, t + Duration::from_secs(59)));
        assert!(!l.recent(b, t), "another peer's path");
        assert!(!l.recent(a, t + LOSSY_FOR), "a minute on");
        l.answered(b, t + Duration::from_mins(2));
        assert_eq!(l.answered.len(), 1, "the old entry is pruned");
    }
}
