//! Events the probe pushes to the agent through the `NEWS` ring buffer: the only moments a
//! watched socket's record changes, so the agent re-reads a record only when it has news and
//! never walks the whole map to find out what changed.

/// The socket was recorded (`sock_ops` at ESTABLISHED, keepalive already armed).
pub const ESTABLISHED: u32 = 1;
/// A trouble episode began (the first retransmission or RTO since `snd_una` last moved), or
/// it had one more RTO; `arg` = the episode's RTOs so far.
pub const TROUBLE: u32 = 2;
/// The TCP state changed (other than to CLOSE).
pub const STATE: u32 = 3;
/// The socket closed and its record is gone.
pub const CLOSE: u32 = 4;
/// Keepalive probes of an idle watched socket went unanswered; `arg` = how many in a row, at
/// the moment the next one is sent. Sent when the first one went unanswered (`arg` 1: the
/// first sign of trouble) and for each probe from the agent's threshold on
/// (`max(1, --silent-probes - 2)`), so a dead peer is news without any `sock_diag` read.
pub const UNANSWERED: u32 = 5;
/// The application set keepalive on a watched socket: the record holds the values now in
/// force (`cgroup/setsockopt`).
pub const KEEPALIVE: u32 = 6;

/// Whether a retransmission is `TROUBLE` news: each RTO, and an episode's first
/// retransmission unless segments the peer selectively or duplicately acknowledged are
/// outstanding (`sacked_out` > 0).
///
/// Why not those: fast retransmits are sent while the peer's SACKs and duplicate ACKs
/// arrive (`tcp_fastretrans_alert()` from `tcp_ack()` in
/// <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>; Reno counts
/// duplicate ACKs in `sacked_out` too, `tcp_add_reno_sack()`): a peer that answers. A bulk
/// flow with a little loss starts such an episode at each loss, and each was news that woke
/// the agent at once: about 200 a second on the bench's watched bulk flow, most of the
/// agent's CPU there. The record still counts the retransmission and the episode's start,
/// so a look finds them. A silent peer's episode begins with a tail loss probe or an RTO,
/// news unless segments it acknowledged before it fell silent are still outstanding; then
/// its first RTO is the news, and every RTO is.
#[must_use]
pub const fn trouble_is_news(first: bool, rto: bool, sacked_out: u32) -> bool {
    rto || (first && sacked_out == 0)
}

/// One ring-buffer record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct News {
    pub cookie: u64,
    /// `ESTABLISHED`, `TROUBLE`, `STATE`, `CLOSE`, `UNANSWERED` or `KEEPALIVE`.
    pub kind: u32,
    /// Kind-specific: for `UNANSWERED` the unanswered probes, for `TROUBLE` the RTOs; 0 otherwise.
    pub arg: u32,
}

const _: () = assert!(core::mem::size_of::<News>() == 16);

#[cfg(test)]
mod tests {
    use super::trouble_is_news;

    #[test]
    fn every_rto_and_an_unacknowledged_episode_start_are_news() {
        // A tail loss probe or the first retransmission with nothing acknowledged since.
        assert!(trouble_is_news(true, false, 0));
        // Every RTO, first or not, whatever the peer acknowledged before.
        assert!(trouble_is_news(true, true, 5));
        assert!(trouble_is_news(false, true, 0));
        // Fast recovery the peer's SACKs drive, and retransmissions within an episode.
        assert!(!trouble_is_news(true, false, 3));
        assert!(!trouble_is_news(false, false, 0));
    }
}
