//! The endpoint's in-set sockets are each looked at once per keepalive cycle, when their
//! probe's answer is overdue (`EndpointCall::look_in`): the first sign that a balancer
//! retired their address. Every socket to one address loses its answers at once, so their
//! looks are gathered: a look due within `GAP` of another one of the same peer shares its
//! moment (the later one's, or one `GAP` after the earlier one), and a sweep serves them
//! together. A peer's looks then wake at most one sweep per `GAP`, whatever the number of
//! sockets to it (measured before: 40 sockets to one peer woke about 20 sweeps a second,
//! about half the agent's CPU at a node's usual load). A lone socket's look, kubelet's
//! usual case, is never moved; a gathered one is at most `GAP` late, and its probe's
//! answer is still overdue then.

use std::{
    collections::{BTreeSet, HashMap},
    net::SocketAddr,
    time::Duration,
};

use super::Mono;

/// How close two looks of one peer must be to share a moment.
pub(crate) const GAP: Duration = Duration::from_millis(200);

/// Each peer's look moments still to come.
#[derive(Debug, Default)]
pub(crate) struct Gather {
    by_peer: HashMap<SocketAddr, BTreeSet<Mono>>,
}

impl Gather {
    /// The moment a look of a socket to `peer`, wanted at `want`, is made at (`now`: the
    /// sweep's clock; moments before it are forgotten).
    pub(crate) fn moment(&mut self, peer: SocketAddr, want: Mono, now: Mono) -> Mono {
        // An address whose moments have all passed is forgotten (a balancer's retired
        // addresses would otherwise stay for the agent's life); the others are pruned as
        // they are used: a moment is one per `GAP` to come, so this stays small at any scale.
        self.by_peer
            .retain(|_, m| m.last().is_some_and(|t| *t >= now));
        let moments = self.by_peer.entry(peer).or_default();
        while moments.first().is_some_and(|t| *t < now) {
            moments.pop_first();
        }
        let at = if let Some(later) = moments.range(want..=want + GAP).next() {
            *later
        } else if let Some(earlier) = moments.range(want - GAP..want).next_back() {
            *earlier + GAP
        } else {
            want
        };
        moments.insert(at);
        at
    }

    /// Moments kept, over every peer.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_peer.values().map(BTreeSet::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn peer(last: u8) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, last], 6443))
    }

    #[test]
    fn forty_sockets_to_one_peer_share_a_moment_per_gap_and_none_waits_longer() {
        let mut g = Gather::default();
        let now = Mono::from_secs(100);
        let mut moments = BTreeSet::new();
        // Overdue moments spread over one 1 s cycle, in no order.
        for i in 0..40u64 {
            let want = now + Duration::from_nanos((i * 7 % 40) * 25 * MS);
            let at = g.moment(peer(1), want, now);
            assert!(
                at >= want && at - want <= GAP,
                "socket {i}: {:?} late",
                at - want
            );
            moments.insert(at);
        }
        assert!(moments.len() <= 6, "{} sweeps in one cycle", moments.len());
    }

    #[test]
    fn a_lone_socket_and_another_peers_sockets_are_not_moved() {
        let mut g = Gather::default();
        let now = Mono::from_secs(100);
        let want = now + Duration::from_millis(300);
        assert_eq!(g.moment(peer(1), want, now), want);
        let other = want + Duration::from_millis(50);
        assert_eq!(g.moment(peer(2), other, now), other, "another address");
        // The next cycle: the passed moments are forgotten.
        let next = Mono::from_secs(101) + Duration::from_millis(310);
        assert_eq!(g.moment(peer(1), next, Mono::from_secs(101)), next);
        assert_eq!(g.len(), 1, "every passed moment is forgotten, peer 2's too");
    }
}
