//! Arming TCP keepalive on a watched socket, from `sock_ops` (at ESTABLISHED) and from the
//! TCP iterator (sockets that predate the agent).
//!
//! Every value only ever goes down: the socket's current value (the application's, or the
//! sysctl default of 7200 s / 75 s / 9) is read first and replaced only when it is looser
//! than ours, so an application's stricter choice stands and arming twice changes nothing.
//! `bpf_getsockopt`/`bpf_setsockopt` reach `do_tcp_getsockopt()`/`do_tcp_setsockopt()` for
//! these options through `sol_tcp_sockopt()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/core/filter.c>.
//!
//! Setting these options works since Linux 5.9, reading them only since 6.1: before, the
//! read fails with EINVAL (`_bpf_getsockopt()` in
//! <https://github.com/torvalds/linux/blob/v5.10/net/core/filter.c> knows only
//! `TCP_CONGESTION` and `TCP_SAVED_SYN` at `SOL_TCP`). Then our value is set without reading
//! (`KA_SET_UNREAD`): protecting the idle connection is worth more than keeping an
//! application's stricter value, which could only have been set before the connection was
//! established (a value set afterwards overrides ours anyway), and which is loosened no
//! further than ours. A kernel that refuses the set too (before 5.9) leaves the socket as it
//! was, and its record carries the errno, which `lifeline status` shows.

use core::ffi::c_void;

use aya_ebpf::helpers::generated::{bpf_getsockopt, bpf_setsockopt};
use lifeline_common::{
    Keepalive,
    keepalive::{
        KA_ARMED, KA_OFF, KA_SET_UNREAD, SO_KEEPALIVE, SOL_SOCKET, SOL_TCP, TCP_KEEPCNT,
        TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_USER_TIMEOUT,
    },
};

use crate::maps::KEEPALIVE;

const INT_LEN: i32 = 4;
/// What `bpf_getsockopt` returns for an option the kernel cannot read from BPF.
const EINVAL: i32 = -22;

/// Reads an int option; `Err(-errno)` when the kernel refuses.
fn get(sk: *mut c_void, level: i32, name: i32) -> Result<i32, i32> {
    let mut v: i32 = 0;
    let ptr: *mut i32 = &raw mut v;
    // SAFETY: `ptr` points at a live i32 of INT_LEN bytes; `sk` is the program's socket.
    let ret = unsafe { bpf_getsockopt(sk, level, name, ptr.cast(), INT_LEN) };
    #[allow(
        clippy::cast_possible_truncation,
        reason = "helpers return 0 or -errno"
    )]
    // SAFETY: the helper wrote through `ptr`; read it back the same way.
    if ret == 0 {
        Ok(unsafe { ptr.read_volatile() })
    } else {
        Err(ret as i32)
    }
}

fn set(sk: *mut c_void, level: i32, name: i32, value: i32) -> Result<(), i32> {
    let mut v = value;
    let ptr: *mut i32 = &raw mut v;
    // SAFETY: as in `get`.
    let ret = unsafe { bpf_setsockopt(sk, level, name, ptr.cast(), INT_LEN) };
    #[allow(
        clippy::cast_possible_truncation,
        reason = "helpers return 0 or -errno"
    )]
    if ret == 0 { Ok(()) } else { Err(ret as i32) }
}

/// Lowers `name` to `want` unless it is already at or below it; returns the value in force.
/// `zero_is_off`: for `TCP_USER_TIMEOUT` 0 means "none", the loosest of all. When the kernel
/// cannot read the option, sets `want` unread and says so in `unread`.
fn lower(
    sk: *mut c_void,
    (level, name): (i32, i32),
    want: u32,
    zero_is_off: bool,
    unread: &mut bool,
) -> Result<u32, i32> {
    #[allow(
        clippy::cast_possible_wrap,
        reason = "the agent bounds every value well below i32::MAX"
    )]
    let want_i = want as i32;
    let cur = match get(sk, level, name) {
        #[allow(
            clippy::cast_sign_loss,
            reason = "socket options read here are never negative"
        )]
        Ok(v) => v as u32,
        Err(EINVAL) => {
            set(sk, level, name, want_i)?;
            *unread = true;
            return Ok(want);
        }
        Err(e) => return Err(e),
    };
    if cur != 0 && cur <= want || cur == 0 && !zero_is_off {
        return Ok(cur);
    }
    set(sk, level, name, want_i)?;
    Ok(want)
}

/// Arms keepalive (and `TCP_USER_TIMEOUT` when asked for) on `sk` with the agent's values;
/// writes what is in force into `out`. Returns `KA_ARMED`, `KA_SET_UNREAD` (armed, but the
/// kernel could not read the socket's own values), `KA_OFF` (nothing asked for) or the first
/// negative errno.
pub fn arm(sk: *mut c_void, out: &mut Keepalive) -> i32 {
    let Some(want) = KEEPALIVE.get(0) else {
        return KA_OFF;
    };
    if want.idle_s == 0 && want.user_timeout_ms == 0 {
        return KA_OFF;
    }
    let mut unread = false;
    match try_arm(sk, want, out, &mut unread) {
        Ok(()) if unread => KA_SET_UNREAD,
        Ok(()) => KA_ARMED,
        Err(e) => e,
    }
}

fn try_arm(
    sk: *mut c_void,
    want: &Keepalive,
    out: &mut Keepalive,
    unread: &mut bool,
) -> Result<(), i32> {
    if want.user_timeout_ms != 0 {
        let opt = (SOL_TCP, TCP_USER_TIMEOUT);
        out.user_timeout_ms = lower(sk, opt, want.user_timeout_ms, true, unread)?;
    }
    if want.idle_s == 0 {
        return Ok(());
    }
    out.idle_s = lower(sk, (SOL_TCP, TCP_KEEPIDLE), want.idle_s, false, unread)?;
    out.intvl_s = lower(sk, (SOL_TCP, TCP_KEEPINTVL), want.intvl_s, false, unread)?;
    out.cnt = lower(sk, (SOL_TCP, TCP_KEEPCNT), want.cnt, false, unread)?;
    // Last: turning keepalive on (re)starts its timer with the values set above. Turning it
    // on loosens nothing, so an unreadable flag is simply set.
    match get(sk, SOL_SOCKET, SO_KEEPALIVE) {
        Ok(0) | Err(EINVAL) => set(sk, SOL_SOCKET, SO_KEEPALIVE, 1)?,
        Ok(_) => {}
        Err(e) => return Err(e),
    }
    Ok(())
}
