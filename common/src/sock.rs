//! The per-socket record the probe keeps in the `SOCKETS` map, keyed by socket cookie.

#[cfg(feature = "addr")]
mod addr;
#[cfg(feature = "user")]
mod user;

/// The socket was first seen by the `sock_ops` program at connection establishment.
pub const SOURCE_SOCK_OPS: u8 = 1;
/// The socket predates the agent: seeded from `sock_diag` and armed by the TCP iterator.
pub const SOURCE_ADOPTED: u8 = 2;

/// `sock_ops` callbacks the probe asks for on a watched socket: RTO (1), RETRANS (2) and
/// STATE (4), the ones that carry news. Not RTT (8): it runs on every ACK of new data, about
/// 2,000 to 8,000 times per GB, to say that all is well, which the kernel's own `tcp_info`
/// (`tcpi_last_ack_recv`) already says when the agent looks. See `BPF_SOCK_OPS_*_CB_FLAG` in
/// <https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/bpf.h>.
pub const WATCH_CB_FLAGS: u32 = 1 | 2 | 4;

/// What the kernel probe knows about one watched TCP socket. Times are
/// `bpf_ktime_get_ns()` (`CLOCK_MONOTONIC`), so the agent can age them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SockState {
    pub established_ns: u64,
    /// A lower bound of the last ACK progress: ESTABLISHED, or the last callback that found
    /// `snd_una` moved. No callback runs per ACK, so the kernel's `tcp_info` has the truth.
    pub last_ack_ns: u64,
    /// First retransmission or RTO of the current trouble episode (one starts whenever
    /// `snd_una` moved since the previous callback); 0 when there has been none.
    pub trouble_ns: u64,
    /// As of the last callback, like the counters below.
    pub bytes_acked: u64,
    pub bytes_received: u64,
    /// IPv4 addresses are stored in the first four bytes, network order.
    pub local_addr: [u8; 16],
    pub peer_addr: [u8; 16],
    pub owner_comm: [u8; crate::COMM_LEN],
    pub owner_pid: u32,
    pub snd_una: u32,
    pub snd_nxt: u32,
    /// Segments sent and not yet acknowledged (`tp->packets_out`).
    pub packets_out: u32,
    /// RTO expiries in the current trouble episode.
    pub rto_count: u32,
    /// Retransmitted segments in the current trouble episode.
    pub retrans_count: u32,
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    pub local_port: u16,
    pub peer_port: u16,
    /// `SOURCE_SOCK_OPS` or `SOURCE_ADOPTED`.
    pub source: u8,
    /// TCP state (`TCP_ESTABLISHED` = 1, ...).
    pub state: u8,
    /// `KA_ARMED`, `KA_OFF`, `KA_PENDING` or a negative errno (`crate::keepalive`).
    pub ka_result: i32,
    /// The keepalive values in force on the socket once armed (the application's where
    /// they were stricter).
    pub keepalive: crate::Keepalive,
    /// Why the socket is watched (`crate::watch::BY_*` bits); 0 for an adopted socket.
    pub reasons: u32,
    /// For an adopted socket, whether its callbacks are armed: `ADOPT_ARMED`,
    /// `ADOPT_ALREADY`, `ADOPT_PENDING` (the iterator has not run yet), `ADOPT_NO_ITERATOR`
    /// or the negative errno the iterator's `bpf_setsockopt` gave; anything but the first
    /// two means the agent polls it through `sock_diag`. 0 for a `sock_ops` socket.
    pub adopt: i32,
    /// Linear retransmission timeouts (`TCP_THIN_LINEAR_TIMEOUTS`), which collect the stall
    /// verdict's unanswered transmissions at a fixed cadence: `LTO_ARMED`, `LTO_PAUSED` (off
    /// for this trouble episode: the path is not known to work), `LTO_OFF` (not asked for),
    /// or the negative errno `bpf_setsockopt` gave.
    pub lto: i32,
    /// Keepalive probes that left with one octet of old data (`crate::poke`): the fast
    /// phase's evidence that each poke's probe could be answered without rate limit.
    pub probe_bytes: u32,
    /// The smoothed round-trip time at the last such probe (µs): fast probes never come
    /// faster than two round trips apart.
    pub probe_srtt_us: u32,
    /// Whether the socket's keepalive is deferred to the application's own deadline while
    /// lifeline only observes (`crate::restore`): `DEFERRED_NONE`, the `DEFER_*` kind in
    /// force, or the negative errno the kernel gave. Written by the TCP iterator.
    pub defer: i32,
    /// Explicit padding, always 0.
    pub pad: u32,
}

const _: () = assert!(core::mem::size_of::<SockState>() == 168);
const _: () = assert!(core::mem::align_of::<SockState>() == 8);

impl SockState {
    /// Bytes sent and not yet acknowledged, as of the last callback.
    #[must_use]
    pub const fn unacked_bytes(&self) -> u32 {
        self.snd_nxt.wrapping_sub(self.snd_una)
    }
}

/// `SockState::lto`: linear timeouts are on for this socket (`crate::features::LINEAR_TIMEOUTS`).
pub const LTO_ARMED: i32 = 1;
/// `SockState::lto`: armed, but off for the current trouble episode: its peer is one of the
/// endpoint's addresses and the path to it has not been found working since the episode
/// began (`PATH_ALIVE`), so this may be a whole-path blip, where linear timeouts only move
/// the socket's own retransmissions later than the kernel's schedule once the path is back.
pub const LTO_PAUSED: i32 = 2;
/// `SockState::lto`: linear timeouts were not asked for (`--stall-unanswered 0`), or the
/// socket predates the agent.
pub const LTO_OFF: i32 = 0;

/// `ADOPT` map values: the agent inserts `ADOPT_PENDING` for each pre-existing socket it
/// wants armed; the TCP iterator replaces it with `ADOPT_ARMED` or a negative errno.
pub const ADOPT_PENDING: i32 = 1;
pub const ADOPT_ARMED: i32 = 0;
/// The socket already carried our callback flags: a previous agent armed it (and was killed
/// before the socket closed). Nothing is armed twice.
pub const ADOPT_ALREADY: i32 = 2;
/// `SockState::adopt` only: the TCP iterator could not load on this kernel, so nothing can
/// arm a pre-existing socket (`crate::features::ITER_KEEPALIVE`, `ITER_CALLBACKS`).
pub const ADOPT_NO_ITERATOR: i32 = 3;

/// Whether an adopted socket's `sock_ops` callbacks are armed (else the agent polls it).
#[must_use]
pub const fn adopt_armed(adopt: i32) -> bool {
    adopt == ADOPT_ARMED || adopt == ADOPT_ALREADY
}
