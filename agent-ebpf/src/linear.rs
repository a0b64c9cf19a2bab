//! Linear retransmission timeouts on a watched socket: the stall verdict's evidence is a
//! count of transmissions in a row that got no answer, and the kernel's exponential backoff
//! (200 ms, 400 ms, 800 ms, ...) spaces the 8 it needs over 51 s. With
//! `TCP_THIN_LINEAR_TIMEOUTS` a *thin* stream (fewer than 4 segments in flight, past its
//! initial slow start: kubelet's requests) keeps its RTO for the first 6 retransmissions
//! (`tcp_retransmit_timer()`, `TCP_THIN_LINEAR_RETRIES`, in
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>), so the 8 come within
//! about 2.4 s on a 200 ms RTO. A bulk flow is not thin and keeps the usual backoff; a healthy
//! stream never retransmits and costs nothing.
//!
//! The kernel counts a stream as thin only once it has left its *initial* slow start
//! (`tcp_stream_is_thin()`: `snd_ssthresh` below `TCP_INFINITE_SSTHRESH`,
//! <https://github.com/torvalds/linux/blob/v6.18/include/net/tcp.h>). Cubic leaves it at the
//! first RTO (`tcp_enter_loss()` takes its `ssthresh`), but BBR sets the infinite value at
//! init and its `ssthresh` callback hands it back, so under BBR (the default of this
//! project's lab machine, and of many cloud images) a stream never becomes thin and the
//! option alone does nothing: measured, 8 RTOs took 2.1 s under cubic and 51 s under BBR.
//! So at each RTO of a socket with linear timeouts whose `snd_ssthresh` is still infinite,
//! the probe sets `TCP_BPF_SNDCWND_CLAMP` to one below it: that writes `snd_cwnd_clamp` and
//! `snd_ssthresh` (`bpf_sol_tcp_setsockopt()`), which clamps no window (2^31 - 2 segments)
//! and changes nothing BBR uses, and only ends the "initial" mark. The RTO callback runs in
//! `tcp_write_timeout()`, before `tcp_retransmit_timer()` chooses the next timeout, so the
//! same RTO is already linear. Setting it at ESTABLISHED would not do: BBR's init runs
//! after that callback (`tcp_init_transfer()`,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>). Nothing of this moves
//! a packet while the stream is healthy.
//!
//! `bpf_setsockopt` accepts the linear-timeouts option from Linux 6.1 (`sol_tcp_sockopt()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/core/filter.c>); 5.10 refuses it with
//! EINVAL, which the record keeps (`lifeline_common::features::LINEAR_TIMEOUTS`).

use core::ffi::c_void;

use lifeline_common::{
    SockState,
    keepalive::{SOL_TCP, TCP_BPF_SNDCWND_CLAMP, TCP_THIN_LINEAR_TIMEOUTS},
    restore::{Original, opt},
    sock::{LTO_ARMED, LTO_OFF, LTO_PAUSED},
    watch::{ARM_LINEAR_TIMEOUTS, PeerKey},
};

use crate::{
    keepalive::{get, set},
    maps::{ORIGINALS, PATH_ALIVE, config_flag},
};

/// Turns linear timeouts on for `sk` when the agent asked for them, noting the socket's own
/// setting in `orig` (readable wherever settable, 6.1): `LTO_ARMED`, `LTO_OFF` or the
/// negative errno.
pub(crate) fn arm(sk: *mut c_void, orig: &mut Original) -> i32 {
    if !config_flag(ARM_LINEAR_TIMEOUTS) {
        return LTO_OFF;
    }
    #[allow(clippy::cast_sign_loss, reason = "a flag")]
    let cur = get(sk, SOL_TCP, TCP_THIN_LINEAR_TIMEOUTS)
        .ok()
        .map(|v| v as u32);
    orig.note(opt::LINEAR, cur);
    if cur == Some(1) {
        return LTO_ARMED;
    }
    match set(sk, SOL_TCP, TCP_THIN_LINEAR_TIMEOUTS, 1) {
        Ok(()) => {
            orig.mark(opt::LINEAR, 1);
            LTO_ARMED
        }
        Err(e) => e,
    }
}

/// At an RTO of a socket with linear timeouts: keep them for this trouble episode only while
/// the path to its peer is known to work (`path_known_to_work`), turning the option off or
/// on again to match (`LTO_PAUSED`, `LTO_ARMED`); then, while they run, end the initial slow
/// start mark if the congestion control left `snd_ssthresh` infinite, so this RTO and the
/// next are linear. That mark is noted in the socket's `ORIGINALS` entry: the one change the
/// restore pass can only report.
pub(crate) fn at_rto(sk: *mut c_void, cookie: u64, s: &mut SockState, snd_ssthresh: u32) {
    /// `TCP_INFINITE_SSTHRESH` (include/net/tcp.h).
    const INFINITE: u32 = 0x7fff_ffff;
    if s.lto != LTO_ARMED && s.lto != LTO_PAUSED {
        return;
    }
    let (want, on) = if path_known_to_work(s) {
        (LTO_ARMED, 1)
    } else {
        (LTO_PAUSED, 0)
    };
    if want != s.lto && set(sk, SOL_TCP, TCP_THIN_LINEAR_TIMEOUTS, on).is_ok() {
        s.lto = want;
    }
    if s.lto == LTO_ARMED && snd_ssthresh >= INFINITE {
        // A refusal leaves the socket as the kernel would have it: exponential backoff, and
        // the time rule finds the stall.
        #[allow(clippy::cast_possible_wrap, reason = "0x7fff_fffe fits in an i32")]
        if set(sk, SOL_TCP, TCP_BPF_SNDCWND_CLAMP, (INFINITE - 1) as i32).is_ok()
            && let Some(o) = ORIGINALS.get_ptr_mut(cookie)
        {
            // SAFETY: map value of the right type, under the socket's lock.
            unsafe { (*o).changed |= opt::CWND_CLAMP };
        }
    }
}

/// Whether linear timeouts serve this trouble episode. Their point is fast evidence that a
/// flow is dead; their cost is that a socket spends its first seven retransmissions in about
/// 1.4 s, so from then on its exponential backoff runs about 1.2 s behind the kernel's
/// default schedule: a path that comes back by itself after a few seconds (a whole-path
/// blip) serves such a socket up to that much later than without lifeline. So for a socket
/// to one of the endpoint's addresses (`PATH_ALIVE`) they run only once the agent has found
/// the path to that peer working since the episode began (its peer probe, asked for at the
/// episode's first retransmission, answers within a round trip when only the flow is dead).
/// Any other socket keeps them: nothing can tell its blips from its deaths.
fn path_known_to_work(s: &SockState) -> bool {
    let key = PeerKey {
        addr: s.peer_addr,
        port: s.peer_port,
        family: s.family,
        pad: 0,
    };
    // SAFETY: a map lookup; the value is a plain u64 copied out at once.
    match unsafe { PATH_ALIVE.get(key) } {
        None => true,
        Some(alive_ns) => *alive_ns >= s.trouble_ns,
    }
}
