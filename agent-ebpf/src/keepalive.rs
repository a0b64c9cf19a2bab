//! Arming TCP keepalive on a watched socket, from `sock_ops` (at ESTABLISHED) and from the
//! TCP iterator (sockets that predate the agent).
//!
//! The socket's current values (the application's, or the sysctl defaults of 7200 s / 75 s /
//! 9) are read first and merged with ours by the rules of `lifeline_common::sockopt`: idle
//! and interval only go down, and the count is ours unless the application's own interval
//! and count already give up sooner. An application's stricter choice stands and arming
//! twice changes nothing.
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
    restore::{Original, opt as bit},
    sockopt::{count, shorter},
};

use crate::maps::KEEPALIVE;

const INT_LEN: i32 = 4;
/// What `bpf_getsockopt` returns for an option the kernel cannot read from BPF.
const EINVAL: i32 = -22;

/// Reads an int option; `Err(-errno)` when the kernel refuses.
pub(crate) fn get(sk: *mut c_void, level: i32, name: i32) -> Result<i32, i32> {
    let mut v: i32 = 0;
    let ptr: *mut i32 = &raw mut v;
    // SAFETY: `ptr` points at a live i32 of INT_LEN bytes; `sk` is the program's socket.
    let ret = unsafe { bpf_getsockopt(sk, level, name, ptr.cast(), INT_LEN) };
    #[allow(
        clippy::cast_possible_truncation,
        reason = "helpers return 0 or -errno"
    )]
    if ret == 0 {
        // SAFETY: the helper wrote through `ptr`; read it back the same way.
        Ok(unsafe { ptr.read_volatile() })
    } else {
        Err(ret as i32)
    }
}

/// Sets an int option; `Err(-errno)` when the kernel refuses.
pub(crate) fn set(sk: *mut c_void, level: i32, name: i32, value: i32) -> Result<(), i32> {
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

/// Reads `name` as a u32; `Ok(None)` when this kernel cannot read it from BPF.
fn read(sk: *mut c_void, (level, name): (i32, i32)) -> Result<Option<u32>, i32> {
    match get(sk, level, name) {
        #[allow(
            clippy::cast_sign_loss,
            reason = "socket options read here are never negative"
        )]
        Ok(v) => Ok(Some(v as u32)),
        Err(EINVAL) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Sets `name` to `new` unless it already is `cur`.
fn put(sk: *mut c_void, (level, name): (i32, i32), cur: Option<u32>, new: u32) -> Result<u32, i32> {
    if cur != Some(new) {
        #[allow(
            clippy::cast_possible_wrap,
            reason = "the agent bounds every value well below i32::MAX"
        )]
        set(sk, level, name, new as i32)?;
    }
    Ok(new)
}

/// Sets `name` to the shorter of `cur` (unset counts as the loosest) and `want`.
fn shorten(sk: *mut c_void, opt: (i32, i32), cur: Option<u32>, want: u32) -> Result<u32, i32> {
    put(sk, opt, cur, shorter(cur.unwrap_or(0), want))
}

/// Arms keepalive (and `TCP_USER_TIMEOUT` when asked for) on `sk` with the agent's values;
/// writes what is in force into `out`, and what the socket had into `orig` (the values read
/// first, `lifeline_common::restore`). Returns `KA_ARMED`, `KA_SET_UNREAD` (armed, but the
/// kernel could not read the socket's own values), `KA_OFF` (nothing asked for) or the first
/// negative errno.
pub(crate) fn arm(sk: *mut c_void, out: &mut Keepalive, orig: &mut Original) -> i32 {
    let Some(want) = KEEPALIVE.get(0) else {
        return KA_OFF;
    };
    if want.idle_s == 0 && want.user_timeout_ms == 0 {
        return KA_OFF;
    }
    let mut unread = false;
    match try_arm(sk, want, out, orig, &mut unread) {
        Ok(()) if unread => KA_SET_UNREAD,
        Ok(()) => KA_ARMED,
        Err(e) => e,
    }
}

fn try_arm(
    sk: *mut c_void,
    want: &Keepalive,
    out: &mut Keepalive,
    orig: &mut Original,
    unread: &mut bool,
) -> Result<(), i32> {
    if want.user_timeout_ms != 0 {
        // 0 means "none", the loosest of all: only a shorter non-zero value stands.
        let opt = (SOL_TCP, TCP_USER_TIMEOUT);
        let cur = read(sk, opt)?;
        *unread |= cur.is_none();
        orig.note(bit::USER_TIMEOUT, cur);
        out.user_timeout_ms = shorten(sk, opt, cur, want.user_timeout_ms)?;
        orig.mark(bit::USER_TIMEOUT, out.user_timeout_ms);
    } else {
        // Not changed, but a deferral needs it: with a user timeout the kernel's keepalive
        // abort ignores the count (`lifeline_judge::defer`).
        orig.note(
            bit::USER_TIMEOUT,
            read(sk, (SOL_TCP, TCP_USER_TIMEOUT)).ok().flatten(),
        );
    }
    if want.idle_s == 0 {
        return Ok(());
    }
    let (idle, intvl, cnt) = (
        (SOL_TCP, TCP_KEEPIDLE),
        (SOL_TCP, TCP_KEEPINTVL),
        (SOL_TCP, TCP_KEEPCNT),
    );
    let (cur_idle, cur_intvl, cur_cnt) = (read(sk, idle)?, read(sk, intvl)?, read(sk, cnt)?);
    *unread |= cur_idle.is_none() || cur_intvl.is_none() || cur_cnt.is_none();
    orig.note(bit::IDLE, cur_idle);
    orig.note(bit::INTVL, cur_intvl);
    orig.note(bit::CNT, cur_cnt);
    // The rules the `setsockopt` hook applies to the application's later calls
    // (`lifeline_common::sockopt`); an unreadable value counts as unset.
    let new_cnt = count(cur_cnt.unwrap_or(0), cur_intvl.unwrap_or(0), want);
    out.idle_s = shorten(sk, idle, cur_idle, want.idle_s)?;
    out.intvl_s = shorten(sk, intvl, cur_intvl, want.intvl_s)?;
    out.cnt = put(sk, cnt, cur_cnt, new_cnt)?;
    orig.mark(bit::IDLE, out.idle_s);
    orig.mark(bit::INTVL, out.intvl_s);
    orig.mark(bit::CNT, out.cnt);
    // Last: turning keepalive on (re)starts its timer with the values set above. Turning it
    // on loosens nothing, so an unreadable flag is simply set.
    match get(sk, SOL_SOCKET, SO_KEEPALIVE) {
        Ok(0) => {
            orig.note(bit::KEEPALIVE, Some(0));
            set(sk, SOL_SOCKET, SO_KEEPALIVE, 1)?;
        }
        Err(EINVAL) => set(sk, SOL_SOCKET, SO_KEEPALIVE, 1)?,
        #[allow(clippy::cast_sign_loss, reason = "a flag")]
        Ok(v) => orig.note(bit::KEEPALIVE, Some(v as u32)),
        Err(e) => return Err(e),
    }
    orig.mark(bit::KEEPALIVE, 1);
    Ok(())
}
