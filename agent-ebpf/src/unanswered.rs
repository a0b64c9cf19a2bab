//! fentry on `tcp_write_wakeup()`: the kernel tells the agent when a watched idle socket's
//! keepalive probes go unanswered, so a dead peer is news instead of something the agent
//! finds by reading every idle socket's `tcp_info` through `sock_diag` on a schedule.
//!
//! `tcp_keepalive_timer()` sends each keepalive probe through `tcp_write_wakeup()` and only
//! then counts it in `icsk_probes_out`
//! (<https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>), which any ACK
//! from the peer resets to 0 (`tcp_ack()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>): at entry it is the
//! number of earlier probes still unanswered. Zero-window probes take the same path
//! (`tcp_send_probe0()` in <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_output.c>)
//! and the same counter: unanswered, they mean the same silent peer.
//!
//! It runs for every keepalive probe of the host, so a probe below the threshold costs one
//! kernel read and nothing else. The struct offsets come from the running kernel's BTF at
//! load time (Rust eBPF has no CO-RE field relocations), in read-only globals the verifier
//! sees as constants.

use aya_ebpf::{Global, helpers::bpf_probe_read_kernel, macros::fentry, programs::FEntryContext};
use lifeline_common::{config::stats, news};

use crate::maps::{SOCKETS, count, news};

/// `lifeline_common::globals::PROBES_OUT_OFFSET`; 0: unknown, do nothing.
#[unsafe(no_mangle)]
static PROBES_OUT_OFFSET: Global<u32> = Global::new(0);
/// `lifeline_common::globals::COOKIE_OFFSET`.
#[unsafe(no_mangle)]
static COOKIE_OFFSET: Global<u32> = Global::new(0);
/// `lifeline_common::globals::UNANSWERED_MIN`.
#[unsafe(no_mangle)]
static UNANSWERED_MIN: Global<u32> = Global::new(u32::MAX);

#[fentry(function = "tcp_write_wakeup")]
pub fn lifeline_unanswered(ctx: FEntryContext) -> u32 {
    let _ = try_unanswered(&ctx);
    0
}

fn try_unanswered(ctx: &FEntryContext) -> Option<()> {
    let sk: *const u8 = ctx.arg(0);
    let at = PROBES_OUT_OFFSET.load();
    if sk.is_null() || at == 0 {
        return None;
    }
    // SAFETY: a read of one byte of the live socket the kernel passed, at the offset its own
    // BTF gives; `bpf_probe_read_kernel` cannot fault.
    let probes_out: u8 = unsafe { bpf_probe_read_kernel(sk.wrapping_add(at as usize)) }.ok()?;
    if u32::from(probes_out) < UNANSWERED_MIN.load() {
        return None;
    }
    // `sk->__sk_common.skc_cookie`: 0 while no one asked for it, so never a watched socket
    // (`sock_ops` takes the cookie of every socket it records).
    let at = COOKIE_OFFSET.load() as usize;
    // SAFETY: as above, eight bytes of the same socket.
    let cookie: u64 = unsafe { bpf_probe_read_kernel(sk.wrapping_add(at).cast::<u64>()) }.ok()?;
    if cookie == 0 {
        return None;
    }
    SOCKETS.get_ptr(cookie)?;
    news(cookie, news::UNANSWERED, u32::from(probes_out));
    count(stats::UNANSWERED);
    Some(())
}
