//! TCP keepalive settings the probe applies to watched sockets, and what it applied.
//!
//! An idle connection sends nothing, so a black-holed peer never causes a retransmission;
//! keepalive probes are the only traffic that can go unanswered. The agent writes the
//! wanted values into the `KEEPALIVE` map; the probe lowers each of the socket's own values
//! to them (never raises one: a stricter value the application chose stays) and records the
//! values in force in the socket's `SockState`.

/// Keepalive timing, in the units of the socket options (`tcp(7)`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keepalive {
    /// `TCP_KEEPIDLE`, seconds; 0 in the `KEEPALIVE` map: do not arm keepalive.
    pub idle_s: u32,
    /// `TCP_KEEPINTVL`, seconds.
    pub intvl_s: u32,
    /// `TCP_KEEPCNT`.
    pub cnt: u32,
    /// `TCP_USER_TIMEOUT`, milliseconds; 0: leave it alone.
    pub user_timeout_ms: u32,
}

const _: () = assert!(core::mem::size_of::<Keepalive>() == 16);

/// `SockState::ka_result`: keepalive is armed with the values in `SockState::keepalive`.
pub const KA_ARMED: i32 = 0;
/// `SockState::ka_result`: the agent asked for no keepalive (`--keepalive off`).
pub const KA_OFF: i32 = 1;
/// `SockState::ka_result`: not armed (yet): a pre-existing socket the TCP iterator has not
/// reached. Negative values are the errno the kernel returned.
pub const KA_PENDING: i32 = 2;
/// `SockState::ka_result`: armed with the agent's values, set without reading the
/// socket's own first: the kernel cannot read these options from BPF
/// (`crate::features::KEEPALIVE_READ`), so an application's stricter value set before the
/// connection was established may have been loosened to the agent's.
pub const KA_SET_UNREAD: i32 = 3;
/// `SockState::ka_result`: a pre-existing socket on a kernel whose TCP iterator cannot load
/// (`crate::features::ITER_KEEPALIVE`): nothing can arm it.
pub const KA_NO_ITERATOR: i32 = 4;

/// Whether keepalive is in force with the values recorded beside the result.
#[must_use]
pub const fn ka_armed(result: i32) -> bool {
    result == KA_ARMED || result == KA_SET_UNREAD
}

// Option numbers from include/uapi/asm-generic/socket.h and include/uapi/linux/tcp.h.
pub const SOL_SOCKET: i32 = 1;
pub const SO_KEEPALIVE: i32 = 9;
pub const SOL_TCP: i32 = 6;
pub const TCP_KEEPIDLE: i32 = 4;
pub const TCP_KEEPINTVL: i32 = 5;
pub const TCP_KEEPCNT: i32 = 6;
pub const TCP_USER_TIMEOUT: i32 = 18;
pub const TCP_THIN_LINEAR_TIMEOUTS: i32 = 16;
/// `bpf_setsockopt` only (include/uapi/linux/bpf.h): sets `snd_cwnd_clamp` and `snd_ssthresh`.
pub const TCP_BPF_SNDCWND_CLAMP: i32 = 1002;

/// Limits the kernel enforces (`MAX_TCP_KEEPIDLE`, `MAX_TCP_KEEPINTVL`, `MAX_TCP_KEEPCNT` in
/// include/net/tcp.h).
pub const MAX_KEEPIDLE_S: u32 = 32_767;
pub const MAX_KEEPINTVL_S: u32 = 32_767;
pub const MAX_KEEPCNT: u32 = 127;

#[cfg(feature = "user")]
// SAFETY: `repr(C)`, four u32 without padding (size checked above), any bit pattern valid.
unsafe impl aya::Pod for Keepalive {}
