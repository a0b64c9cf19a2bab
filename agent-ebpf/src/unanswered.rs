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
//! kernel read and nothing else. The first unanswered probe (1 at the next one's send) is
//! news too: the first sign of trouble, which the agent answers by re-resolving the
//! endpoint at once (a rotated endpoint is then followed within seconds, not at its TTL). The struct offsets come from the running kernel's BTF at
//! load time (Rust eBPF has no CO-RE field relocations), in read-only globals the verifier
//! sees as constants.
//!
//! Where fentry cannot load (kernels that refuse BPF trampolines: this project's CI machines
//! answer EPERM for any function), the same check runs from the `timer:timer_expire_entry`
//! tracepoint (`tp_btf`), for the timers whose function is `tcp_keepalive_timer`: the
//! keepalive timer is `sk->sk_timer`, and it fires just before each probe. That tracepoint
//! sees every timer of the host, so it is only the fallback.
//!
//! The fallback needs `tcp_keepalive_timer`'s address. /proc/kallsyms shows it only to
//! `CAP_SYSLOG` when `perf_event_paranoid` > 1 (`kallsyms_show_value()` in
//! <https://github.com/torvalds/linux/blob/v6.18/kernel/ksyms_common.c>): a pod reads 0s
//! there. So the TCP iterator (`adopt.rs`) also reads it from a TCP socket of the agent's
//! own, whose cookie the agent writes into `KEEPALIVE_FN`: every TCP socket's `sk_timer`
//! is set up with `tcp_keepalive_timer` (`tcp_init_xmit_timers()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>, called for each
//! new socket by `tcp_init_sock()`), and nothing changes it. Kernels without the iterator
//! (before 5.12) have only kallsyms.

use aya_ebpf::{
    Global,
    helpers::{bpf_ktime_get_ns, bpf_probe_read_kernel},
    macros::{btf_tracepoint, fentry, map},
    maps::Array,
    programs::{BtfTracePointContext, FEntryContext},
};
use lifeline_common::{config::stats, keepalive_fn, news, poke::Poke};

use crate::{
    maps::{POKE, SOCKETS, count, news},
    poke,
};

/// `lifeline_common::globals::PROBES_OUT_OFFSET`; 0: unknown, do nothing.
#[unsafe(no_mangle)]
static PROBES_OUT_OFFSET: Global<u32> = Global::new(0);
/// `lifeline_common::globals::COOKIE_OFFSET`.
#[unsafe(no_mangle)]
static COOKIE_OFFSET: Global<u32> = Global::new(0);
/// `lifeline_common::globals::UNANSWERED_MIN`.
#[unsafe(no_mangle)]
static UNANSWERED_MIN: Global<u32> = Global::new(u32::MAX);
/// `lifeline_common::globals::TIMER_FUNCTION_OFFSET`.
#[unsafe(no_mangle)]
static TIMER_FUNCTION_OFFSET: Global<u32> = Global::new(0);
/// `lifeline_common::globals::SK_TIMER_OFFSET`.
#[unsafe(no_mangle)]
static SK_TIMER_OFFSET: Global<u32> = Global::new(0);
/// `lifeline_common::globals::KEEPALIVE_TIMER`; 0: unknown, the fallback does nothing.
#[unsafe(no_mangle)]
static KEEPALIVE_TIMER: Global<u64> = Global::new(0);
/// `lifeline_common::globals::FAST_INTERVAL_NS`; 0: fast probes off, no phase opens.
#[unsafe(no_mangle)]
pub(crate) static FAST_INTERVAL_NS: Global<u64> = Global::new(0);

/// `lifeline_common::keepalive_fn`: the agent's socket's cookie, and the address the TCP
/// iterator read from it (0 until it has).
#[map]
pub(crate) static KEEPALIVE_FN: Array<u64> = Array::with_max_entries(keepalive_fn::LEN, 0);

/// For the TCP iterator, on every socket it visits: when `sk` is the agent's own socket,
/// keep its keepalive timer's function.
pub(crate) fn learn_keepalive_timer(sk: *const u8, cookie: u64) {
    let ours = KEEPALIVE_FN.get(keepalive_fn::COOKIE).copied();
    if cookie == 0 || ours != Some(cookie) {
        return;
    }
    let timer = sk.wrapping_add(SK_TIMER_OFFSET.load() as usize);
    let Some(function) = read::<u64>(timer, TIMER_FUNCTION_OFFSET.load()) else {
        return;
    };
    if let Some(slot) = KEEPALIVE_FN.get_ptr_mut(keepalive_fn::ADDRESS) {
        // SAFETY: the array's slot, plain data.
        unsafe { *slot = function };
    }
}

#[fentry(function = "tcp_write_wakeup")]
pub(crate) fn lifeline_unanswered(ctx: FEntryContext) -> u32 {
    let _ = report(ctx.arg(0));
    0
}

/// `timer_expire_entry(struct timer_list *timer, unsigned long baseclk)`
/// (<https://github.com/torvalds/linux/blob/v6.18/include/trace/events/timer.h>), run by
/// `expire_timers()` right before `timer->function(timer)`.
#[btf_tracepoint(function = "timer_expire_entry")]
pub(crate) fn lifeline_unanswered_timer(ctx: BtfTracePointContext) -> u32 {
    let _ = try_timer(&ctx);
    0
}

fn try_timer(ctx: &BtfTracePointContext) -> Option<()> {
    let timer: *const u8 = ctx.arg(0);
    let want = match KEEPALIVE_TIMER.load() {
        0 => KEEPALIVE_FN.get(keepalive_fn::ADDRESS).copied()?,
        known => known,
    };
    if timer.is_null() || want == 0 {
        return None;
    }
    let function: u64 = read(timer, TIMER_FUNCTION_OFFSET.load())?;
    if function != want {
        return None;
    }
    // `tcp_keepalive_timer()` only ever runs on `sk->sk_timer`.
    report(timer.wrapping_sub(SK_TIMER_OFFSET.load() as usize))
}

fn report(sk: *const u8) -> Option<()> {
    let at = PROBES_OUT_OFFSET.load();
    if sk.is_null() || at == 0 {
        return None;
    }
    let probes_out: u8 = read(sk, at)?;
    // The first unanswered probe is news (the first sign of trouble: the agent re-resolves
    // the endpoint and looks at the socket), then each one from the threshold on. A healthy
    // socket's probe finds 0 here (its last one was answered): no news, no cost.
    if probes_out == 0 || (probes_out > 1 && u32::from(probes_out) < UNANSWERED_MIN.load()) {
        return None;
    }
    // `sk->__sk_common.skc_cookie`: 0 while no one asked for it, so never a watched socket
    // (`sock_ops` takes the cookie of every socket it records).
    let cookie: u64 = read(sk, COOKIE_OFFSET.load())?;
    if cookie == 0 {
        return None;
    }
    let rec = SOCKETS.get_ptr(cookie)?;
    // SAFETY: map value of the right type; plain field reads.
    let (deferred, cnt) = unsafe { ((*rec).defer != 0, (*rec).keepalive.cnt) };
    // A count in force that ends the socket before the silent verdict's probes are in (the
    // application's own, stricter) gains nothing from fast probes: they would only bring the
    // application's own abort forward.
    if probes_out == 1 && FAST_INTERVAL_NS.load() != 0 && !deferred && poke::worth_it(cnt) {
        // The first unanswered probe: a fast phase opens before the second is sent, so that
        // one already carries its octet (`crate::byteprobe`), and the TCP iterator pokes the
        // next one an interval later if it too is unanswered (`crate::poke`).
        // SAFETY: map value of the right type; only counters are read.
        let base_bytes = unsafe { (*rec).probe_bytes };
        // SAFETY: a helper without arguments.
        let now = unsafe { bpf_ktime_get_ns() };
        let entry = Poke {
            started_ns: now,
            last_ns: now,
            base_bytes,
            pokes: 0,
            // The opening stands for the second probe: the first poke finds it sent. On the
            // timer tracepoint it may not be (data went out since the first: the timer only
            // re-arms), and that phase ends at once as busy (`crate::poke`).
            out_at_poke: 1,
        };
        // BPF_NOEXIST: a phase already open keeps its own count.
        let _ = POKE.insert(cookie, entry, 1);
    }
    news(cookie, news::UNANSWERED, u32::from(probes_out));
    count(stats::UNANSWERED);
    Some(())
}

/// `icsk_probes_out` of a socket the kernel handed the program (the TCP iterator's): keepalive
/// probes sent since the peer last answered.
pub(crate) fn probes_out(sk: *const u8) -> Option<u8> {
    match PROBES_OUT_OFFSET.load() {
        0 => None,
        at => read(sk, at),
    }
}

/// The `T` at byte `at` of the kernel object at `base` (a socket or timer the kernel passed,
/// at an offset its own BTF gives).
fn read<T>(base: *const u8, at: u32) -> Option<T> {
    #[allow(
        clippy::cast_ptr_alignment,
        reason = "bpf_probe_read_kernel copies bytes: no aligned load"
    )]
    let src = base.wrapping_add(at as usize).cast::<T>();
    // SAFETY: the helper copies through the kernel's fault-safe path and fails instead of
    // faulting.
    unsafe { bpf_probe_read_kernel(src) }.ok()
}
