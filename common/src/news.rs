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
