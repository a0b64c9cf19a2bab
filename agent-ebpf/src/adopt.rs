//! `iter/tcp`: arm the sockets that existed before the agent attached.
//!
//! `sock_ops` callbacks are per socket flags, normally set at ESTABLISHED, which an old
//! socket has long passed. The agent seeds their records from `sock_diag` and lists
//! their cookies in `ADOPT`; reading this iterator once walks every TCP socket of the
//! agent's network namespace with the socket lock held, and for listed cookies sets the
//! callback flags with `bpf_setsockopt(TCP_BPF_SOCK_OPS_CB_FLAGS)` (Linux 6.12,
//! `bpf_sol_tcp_setsockopt()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/core/filter.c>). The same pass arms
//! keepalive on them (`keepalive.rs`), as `sock_ops` does for new ones, and reads
//! `tcp_keepalive_timer`'s address from a socket of the agent's own (`unanswered.rs`).
//!
//! Older kernels, as the kernel matrix measured them: 6.1 loads this program but refuses
//! the flags with EINVAL at run time (`bpf_sol_tcp_setsockopt()` in
//! <https://github.com/torvalds/linux/blob/v6.1/net/core/filter.c> has no such option),
//! so keepalive is armed and the callbacks are not; 5.10 does not load it (no
//! `bpf_get_socket_cookie` for tracing programs before 5.12, no `bpf_setsockopt` in
//! `iter/tcp` before 5.15). Sockets whose callbacks are not armed are polled through
//! `sock_diag` by the agent.

use core::ffi::c_void;

use aya_ebpf::helpers::generated::{bpf_get_socket_cookie, bpf_getsockopt, bpf_setsockopt};
use lifeline_common::{
    restore::{Original, opt},
    sock::{ADOPT_ALREADY, ADOPT_ARMED, ADOPT_PENDING, WATCH_CB_FLAGS},
    watch::RESTORE,
};

use crate::{
    keepalive, linear,
    maps::{ADOPT, ORIGINALS, SOCKETS, config_flag},
    poke, restore, unanswered,
};

const SOL_TCP: i32 = 6;
const TCP_BPF_SOCK_OPS_CB_FLAGS: i32 = 1008;

/// `struct bpf_iter__tcp` (`net/ipv4/tcp_ipv4.c`): the iterator's context.
#[repr(C)]
pub(crate) struct IterTcp {
    meta: *mut c_void,
    sk_common: *mut c_void,
    uid: u32,
}

#[unsafe(no_mangle)]
#[unsafe(link_section = "iter/tcp")]
pub(crate) extern "C" fn lifeline_adopt(ctx: *mut IterTcp) -> i32 {
    // SAFETY: the kernel passes a valid context; `sk_common` may be NULL at the end.
    let sk = unsafe { (*ctx).sk_common };
    if sk.is_null() {
        return 0;
    }
    // SAFETY: `sk` is a non-NULL socket pointer typed by BTF; the helpers only read it.
    let cookie = unsafe { bpf_get_socket_cookie(sk) };
    unanswered::learn_keepalive_timer(sk.cast_const().cast(), cookie);
    // The final pass at a clean stop (or a start after a crash): put back, arm nothing.
    if config_flag(RESTORE) {
        restore::visit(sk, cookie);
        return 0;
    }
    poke::visit(sk, cookie);
    restore::defer(sk, cookie);
    let Some(status) = ADOPT.get_ptr_mut(cookie) else {
        return 0;
    };
    // Armed once: later passes (the fast probes' pokes, deferrals) must neither re-read
    // lifeline's own values as the application's nor undo a deferral.
    // SAFETY: map value of type i32.
    if unsafe { *status } != ADOPT_PENDING {
        return 0;
    }
    let mut flags: i32 = 0;
    let len = i32::try_from(core::mem::size_of::<i32>()).unwrap_or(4);
    // Only touched through this pointer: the helpers write and read it behind the
    // compiler's back.
    let flags_ptr: *mut i32 = &raw mut flags;
    let opt = flags_ptr.cast::<c_void>();
    // Keep whatever flags other programs set; only add ours.
    // SAFETY: `opt` points at a live i32 of `len` bytes.
    let mut ret = unsafe { bpf_getsockopt(sk, SOL_TCP, TCP_BPF_SOCK_OPS_CB_FLAGS, opt, len) };
    let mut already = false;
    // SAFETY: `flags_ptr` points at the live local above; the helper wrote it on success.
    let before = (ret == 0).then(|| unsafe { *flags_ptr });
    if ret == 0 {
        #[allow(clippy::cast_possible_wrap, reason = "the flags fit in 7 bits")]
        let watch = WATCH_CB_FLAGS as i32;
        // SAFETY: `flags_ptr` points at the live local above.
        already = unsafe { *flags_ptr } & watch == watch;
        if !already {
            // SAFETY: as above.
            unsafe { *flags_ptr |= watch };
            // SAFETY: as above.
            ret = unsafe { bpf_setsockopt(sk, SOL_TCP, TCP_BPF_SOCK_OPS_CB_FLAGS, opt, len) };
        }
    }
    #[allow(
        clippy::cast_possible_truncation,
        reason = "helpers return 0 or -errno"
    )]
    let result = match (ret, already) {
        (0, true) => ADOPT_ALREADY,
        (0, false) => ADOPT_ARMED,
        _ => ret as i32,
    };
    #[allow(
        clippy::needless_borrows_for_generic_args,
        reason = "a reference to the promoted constant: no 48-byte copy on the BPF stack"
    )]
    let _ = ORIGINALS.insert(cookie, &Original::NONE, 0);
    if let (Some(rec), Some(orig)) = (SOCKETS.get_ptr_mut(cookie), ORIGINALS.get_ptr_mut(cookie)) {
        // SAFETY: map values of the right types; the iterator holds the socket's lock.
        let (rec, orig) = unsafe { (&mut *rec, &mut *orig) };
        rec.adopt = result;
        #[allow(clippy::cast_sign_loss, reason = "callback flags fit in 7 bits")]
        if let Some(before) = before.map(|f| f as u32) {
            orig.note(opt::CALLBACKS, Some(before));
            if result == ADOPT_ARMED {
                orig.mark(opt::CALLBACKS, before | WATCH_CB_FLAGS);
            }
        }
        // Even when the callbacks cannot be armed (6.1-6.11: the flags are not a
        // `bpf_setsockopt` option there), keepalive can, and the agent's polling then
        // finds a silent peer. Lowering only, so a socket a killed agent armed keeps
        // exactly its values (and the originals it read at start: `restore`).
        rec.ka_result = keepalive::arm(sk, &mut rec.keepalive, orig);
        rec.lto = linear::arm(sk, orig);
    }
    // SAFETY: map value of type i32.
    unsafe { *status = result };
    0
}
