//! What the probe and the agent could not keep, counted since the start: each count is a
//! way a socket goes unwatched or news goes unseen, so `lifeline status` and `lifeline
//! check` warn when one is not zero. Skipped connects are the exception: they are the node's
//! other traffic to the watched ports (or a neighbour's flood of it), which nothing needs.

use lifeline_common::config::stats;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Capacity {
    /// Connects to a watched port that recorded no owner: no target reason, and not to one
    /// of the endpoint's addresses (`stats::OWNERS_SKIPPED`). Not a loss.
    pub owners_skipped: u64,
    /// Sockets watched only for their peer that were not recorded: the endpoint clients'
    /// share of `SOCKETS` was full (`stats::ENDPOINT_QUOTA_FULL`).
    pub endpoint_quota_full: u64,
    /// News the kernel could not queue (`stats::NEWS_LOST`): the agent re-read the map.
    pub news_lost: u64,
    /// News the agent's inbox had no room for (`kernel::readers::INBOX_CAP`): the same.
    pub inbox_dropped: u64,
}

impl Capacity {
    /// From the probe's counters and the inbox's.
    #[must_use]
    pub(crate) fn new(probe: &[u64; stats::LEN as usize], inbox_dropped: u64) -> Self {
        Self {
            owners_skipped: probe[stats::OWNERS_SKIPPED as usize],
            endpoint_quota_full: probe[stats::ENDPOINT_QUOTA_FULL as usize],
            news_lost: probe[stats::NEWS_LOST as usize],
            inbox_dropped,
        }
    }

    /// One text per count that is a loss and not zero (`sockets_full`: the snapshot's own
    /// count of sockets `SOCKETS` had no room for); empty when nothing was lost.
    #[must_use]
    pub(crate) fn warnings(&self, sockets_full: u64) -> Vec<String> {
        let mut out = Vec::new();
        if sockets_full > 0 {
            out.push(format!(
                "{sockets_full} socket(s) NOT watched: SOCKETS was full (raise --max-sockets)"
            ));
        }
        if self.endpoint_quota_full > 0 {
            out.push(format!(
                "{} socket(s) watched only for their peer NOT watched: the endpoint clients' share of SOCKETS (a quarter of --max-sockets) was full",
                self.endpoint_quota_full
            ));
        }
        if self.news_lost > 0 || self.inbox_dropped > 0 {
            out.push(format!(
                "news lost: {} in the kernel's ring buffer, {} past the agent's inbox (each loss made the agent re-read every record)",
                self.news_lost, self.inbox_dropped
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_losses_warn_and_each_names_its_cause() {
        let mut probe = [0u64; stats::LEN as usize];
        probe[stats::OWNERS_SKIPPED as usize] = 90_000;
        let c = Capacity::new(&probe, 0);
        assert_eq!(c.owners_skipped, 90_000);
        assert!(c.warnings(0).is_empty(), "skipped connects are no loss");
        probe[stats::ENDPOINT_QUOTA_FULL as usize] = 3;
        probe[stats::NEWS_LOST as usize] = 1;
        let w = Capacity::new(&probe, 2).warnings(4);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].starts_with("4 socket(s) NOT watched"), "{w:?}");
        assert!(
            w[1].starts_with("3 socket(s) watched only for their peer"),
            "{w:?}"
        );
        assert!(
            w[2].contains("1 in the kernel's ring buffer, 2 past"),
            "{w:?}"
        );
    }
}
