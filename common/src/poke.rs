//! Fast keepalive probes: the `POKE` map's entries, one per watched idle socket whose first
//! keepalive probe went unanswered (docs/ARCHITECTURE.md, "Fast probes").
//!
//! The kernel's keepalive interval is whole seconds (`TCP_KEEPINTVL` is multiplied by `HZ`
//! in `do_tcp_setsockopt()`, for userspace and `bpf_setsockopt` alike), and a Linux peer
//! answers a zero-length out-of-window probe at most every 500 ms
//! (`tcp_oow_rate_limited()`, `net.ipv4.tcp_invalid_ratelimit` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>). So:
//! - the unanswered-probe program (`agent-ebpf/src/unanswered.rs`) opens an entry when a
//!   watched socket's first probe goes unanswered, right before the second is sent; the
//!   agent opens one sooner for an endpoint's socket, when the look its overdue schedule
//!   brings (half an interval after the first probe) finds that probe unanswered;
//! - the tc egress program (`agent-ebpf/src/byteprobe.rs`) gives every keepalive probe of a
//!   socket with an entry one octet of already acknowledged data: the peer's TCP answers
//!   such a segment at once, as a retransmission, with no rate limit (`tcp_data_queue()`,
//!   same file), and counts it in the record (`SockState::probe_bytes`);
//! - the TCP iterator (`agent-ebpf/src/poke.rs`), read by the agent every interval while
//!   entries exist, re-sets `TCP_KEEPIDLE` on a socket whose probe is still unanswered: the
//!   kernel's keepalive timer then fires at once (`tcp_sock_set_keepidle_locked()`,
//!   <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp.c>) and sends the next
//!   probe. It does so only while every probe since the entry opened carried its octet, so
//!   a zero-length probe is never sent faster than the kernel's own cadence.

/// One socket's fast phase, keyed by cookie. Written by the kernel, and by the agent when
/// the judge found an endpoint socket's first probe overdue (`base_bytes` one below the
/// record's then: the opening stands for the octet probe that follows the kernel's own);
/// the agent reads whether it exists and deletes it at the phase's time bound.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Poke {
    /// When the entry opened (`bpf_ktime_get_ns`).
    pub started_ns: u64,
    /// The last poke, or the opening.
    pub last_ns: u64,
    /// `SockState::probe_bytes` when the entry opened.
    pub base_bytes: u32,
    /// Pokes so far: each one sent a probe, which must have carried its octet.
    pub pokes: u16,
    /// `icsk_probes_out` before the last poke's probe (or the one the opening stands for):
    /// the next poke finds it higher, or no probe left (data went out meanwhile,
    /// `agent-ebpf/src/poke.rs`).
    pub out_at_poke: u16,
}

const _: () = assert!(core::mem::size_of::<Poke>() == 24);

/// Unanswered probes from which a phase stops poking: `--silent-probes` + 2, so the
/// verdict's confirming look still finds its evidence (the kernel side's `POKE_LIMIT`).
#[must_use]
pub const fn limit(silent_probes: u8) -> u32 {
    silent_probes as u32 + 2
}

/// Whether fast probes can serve the silent verdict on a socket whose count in force is
/// `cnt`, with `limit` from `limit`: only when the kernel does not abort it before the
/// verdict's probes are unanswered (an application's own stricter count would only be
/// brought forward).
#[must_use]
pub const fn worth_it(cnt: u32, limit: u32) -> bool {
    cnt.saturating_add(2) > limit
}

/// Entries at most: sockets in a fast phase at once (a phase lasts a few seconds). An LRU
/// map: a flood of phases evicts the oldest, which then simply ends.
pub const POKE_ENTRIES: u32 = 256;
/// The shortest `--fast-probes` interval.
pub const MIN_INTERVAL_MS: u64 = 50;
/// The longest.
pub const MAX_INTERVAL_MS: u64 = 1000;
/// A phase ends after this long whatever happens (by then the socket was judged, or
/// answered).
pub const BOUND_NS: u64 = 10_000_000_000;

#[cfg(feature = "user")]
// SAFETY: `repr(C)`, no padding (size checked above), every bit pattern is valid.
unsafe impl aya::Pod for Poke {}
