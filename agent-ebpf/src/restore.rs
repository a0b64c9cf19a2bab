//! The TCP iterator's half of `lifeline_common::restore`: deferrals the agent asked for, and
//! the final pass that puts back what lifeline changed. `bpf_setsockopt` reaches
//! `do_tcp_setsockopt()`/`sk_setsockopt()` here from Linux 5.15 (`bpf_iter_tcp`'s helpers,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_ipv4.c>), with the socket locked.
//!
//! Keepalive's timing as the kernel runs it (`tcp_keepalive_timer()`,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>): at each timer fire,
//! once nothing has come from the peer for `TCP_KEEPIDLE`, the socket is aborted when
//! `icsk_probes_out >= TCP_KEEPCNT` (no `TCP_USER_TIMEOUT`) or when that much time has passed
//! with a probe out (with one), else a probe goes out, `icsk_probes_out` grows and the timer
//! is re-armed for `TCP_KEEPINTVL`; only an ACK from the peer resets the count (`tcp_ack()`).
//! Setting `TCP_KEEPIDLE` re-arms the timer for what is left of the new idle time, counted
//! from the last segment received (`tcp_sock_set_keepidle_locked()`,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp.c>): the one lever that places
//! the next fire exactly, so it is always set last. A count below the probes already out
//! makes the next fire abort the socket, so every count here is relative to them.

use core::ffi::c_void;

use lifeline_common::{
    SockState,
    keepalive::{
        MAX_KEEPCNT, SO_KEEPALIVE, SOL_SOCKET, SOL_TCP, TCP_KEEPCNT, TCP_KEEPIDLE, TCP_KEEPINTVL,
        TCP_THIN_LINEAR_TIMEOUTS, TCP_USER_TIMEOUT,
    },
    restore::{
        DEFER_ALIGN, DEFER_END, DEFER_OFF, DEFER_USER_TIMEOUT, Defer, Original, RESTORE_DONE,
        SET_USER_TIMEOUT, deferred_state, opt,
    },
};

use crate::{
    keepalive::set,
    maps::{DEFER, ORIGINALS, POKE, SOCKETS},
    unanswered::probes_out,
};

/// `TCP_BPF_SOCK_OPS_CB_FLAGS` (include/uapi/linux/bpf.h): settable from Linux 6.12.
const TCP_BPF_SOCK_OPS_CB_FLAGS: i32 = 1008;
/// `-ENODATA`: `icsk_probes_out` cannot be read (no BTF offset), so no count can be made
/// relative to it and nothing is changed.
const NO_PROBES_OUT: i32 = -61;

/// The restore pass, for every socket: put each option lifeline changed back to the
/// application's value; what could not be is noted in `left`.
pub(crate) fn visit(sk: *mut c_void, cookie: u64) {
    let Some(o) = ORIGINALS.get_ptr_mut(cookie) else {
        return;
    };
    // SAFETY: map value of the right type; the iterator holds the socket's lock.
    let o = unsafe { &mut *o };
    o.left = put_back(sk, o);
    o.restored = RESTORE_DONE;
}

fn put_back(sk: *mut c_void, o: &Original) -> u32 {
    let mut left = 0;
    let (changed, known) = (o.changed, o.known);
    let mut one = |bit: u32, level: i32, name: i32, value: u32| {
        if changed & bit == 0 {
            return;
        }
        #[allow(clippy::cast_possible_wrap, reason = "kernel-bounded option values")]
        if known & bit == 0 || set(sk, level, name, value as i32).is_err() {
            left |= bit;
        }
    };
    one(
        opt::USER_TIMEOUT,
        SOL_TCP,
        TCP_USER_TIMEOUT,
        o.user_timeout_ms,
    );
    one(opt::LINEAR, SOL_TCP, TCP_THIN_LINEAR_TIMEOUTS, o.linear);
    // With probes unanswered right now, the application's own count could abort the socket
    // at the next fire, sooner than its own settings would have: raised past them.
    let out = probes_out(sk.cast_const().cast()).map_or(0, u32::from);
    let cnt = if out == 0 {
        o.cnt
    } else {
        (out + o.cnt).min(MAX_KEEPCNT)
    };
    one(opt::CNT, SOL_TCP, TCP_KEEPCNT, cnt);
    one(opt::INTVL, SOL_TCP, TCP_KEEPINTVL, o.intvl_s);
    // Last of the timing: re-arms the timer with the values above (only while on).
    one(opt::IDLE, SOL_TCP, TCP_KEEPIDLE, o.idle_s);
    one(opt::KEEPALIVE, SOL_SOCKET, SO_KEEPALIVE, o.keepalive);
    one(
        opt::CALLBACKS,
        SOL_TCP,
        TCP_BPF_SOCK_OPS_CB_FLAGS,
        o.cb_flags,
    );
    if changed & opt::CNT != 0 && cnt != o.cnt {
        left |= opt::CNT;
    }
    left | (changed & opt::CWND_CLAMP)
}

/// Apply the agent's deferral for `cookie`, if it asked for one, and note the result in the
/// socket's record (`SockState::defer`) and the options it touched in its `ORIGINALS` entry
/// (so that a restore at stop puts them back too).
pub(crate) fn defer(sk: *mut c_void, cookie: u64) {
    // Nearly every socket the iterator visits has no entry: one lookup, and out.
    let Some(d) = DEFER.get_ptr(cookie) else {
        return;
    };
    // SAFETY: map value of the right type, copied out before the entry goes.
    let d = unsafe { *d };
    let _ = DEFER.remove(cookie);
    let Some(rec) = SOCKETS.get_ptr_mut(cookie) else {
        return;
    };
    // SAFETY: map value of the right type; the iterator holds the socket's lock.
    let rec = unsafe { &mut *rec };
    rec.defer = match apply(sk, &d, rec) {
        Ok(()) => deferred_state(d.kind),
        Err(e) => e,
    };
    if rec.defer > 0 {
        // A fast phase must not poke a deferred socket (`crate::poke` checks too).
        let _ = POKE.remove(cookie);
    }
    if let Some(o) = ORIGINALS.get_ptr_mut(cookie) {
        let timing = if d.kind == DEFER_USER_TIMEOUT {
            0
        } else {
            opt::KEEPALIVE_ALL
        };
        let user_timeout = if d.flags & SET_USER_TIMEOUT == 0 {
            0
        } else {
            opt::USER_TIMEOUT
        };
        // SAFETY: as above.
        unsafe { (*o).changed |= timing | user_timeout };
    }
}

fn apply(sk: *mut c_void, d: &Defer, rec: &mut SockState) -> Result<(), i32> {
    if d.flags & SET_USER_TIMEOUT != 0 {
        set(sk, SOL_TCP, TCP_USER_TIMEOUT, int(d.user_timeout_ms))?;
        rec.keepalive.user_timeout_ms = d.user_timeout_ms;
    }
    match d.kind {
        DEFER_OFF => set(sk, SOL_SOCKET, SO_KEEPALIVE, 0),
        DEFER_ALIGN | DEFER_END => {
            let out = u32::from(probes_out(sk.cast_const().cast()).ok_or(NO_PROBES_OUT)?);
            let cnt = match d.kind {
                DEFER_ALIGN => out + d.remaining,
                _ if out == 0 => d.cnt,
                _ => out + d.cnt,
            }
            .clamp(1, MAX_KEEPCNT);
            set(sk, SOL_TCP, TCP_KEEPCNT, int(cnt))?;
            set(sk, SOL_TCP, TCP_KEEPINTVL, int(d.intvl_s))?;
            set(sk, SOL_SOCKET, SO_KEEPALIVE, 1)?;
            set(sk, SOL_TCP, TCP_KEEPIDLE, int(d.idle_s))?;
            rec.keepalive.idle_s = d.idle_s;
            rec.keepalive.intvl_s = d.intvl_s;
            rec.keepalive.cnt = cnt;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// An option value the agent bounded to the kernel's limits (at most 32,767 s or 127).
#[allow(clippy::cast_possible_wrap, reason = "bounded by the agent")]
const fn int(v: u32) -> i32 {
    v as i32
}
