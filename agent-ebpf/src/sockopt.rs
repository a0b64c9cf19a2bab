//! `cgroup/setsockopt` on the cgroup v2 root (Linux 5.3): an application's own keepalive
//! calls on a watched socket are merged with lifeline's values before the kernel applies
//! them, by the rules of `lifeline_common::sockopt`, and the values in force are written
//! into the socket's record, so `lifeline status` shows what the kernel has.
//!
//! The hook runs before the kernel's handler with the socket locked and a kernel copy of
//! the value that may be rewritten in place
//! (`__cgroup_bpf_run_filter_setsockopt()` in
//! <https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/cgroup.c>). It runs for every
//! `setsockopt` of the host: anything that is not a keepalive option of a watched TCP socket
//! in the agent's network namespace leaves at the first test, untouched.

use core::ptr::read_volatile;

use aya_ebpf::{
    bindings::bpf_sock, helpers::generated::bpf_get_netns_cookie, macros::cgroup_sockopt,
    programs::SockoptContext,
};
use lifeline_common::{
    Keepalive, SockState,
    keepalive::{
        SO_KEEPALIVE, SOL_SOCKET, SOL_TCP, TCP_KEEPCNT, TCP_KEEPIDLE, TCP_KEEPINTVL,
        TCP_USER_TIMEOUT, ka_armed,
    },
    news,
    restore::{DEFER_OFF, opt},
    sockopt::{AppSet, SockKey, count, shorter},
};

use crate::maps::{CONFIG, KEEPALIVE, ORIGINALS, SOCKETS, TUPLES, news};

const AF_INET: u32 = 2;
const AF_INET6: u32 = 10;
const IPPROTO_TCP: u32 = 6;
/// Past a page the hook sees only the first page of the value; the kernel must then use the
/// caller's own buffer, which `optlen = 0` asks for (kernels before 6.5 fail the call with
/// EFAULT otherwise, `Documentation/bpf/prog_cgroup_sockopt.rst`).
const PAGE: i32 = 4096;

/// Linux 5.15 on: only sockets in the agent's network namespace.
#[cgroup_sockopt(setsockopt)]
pub(crate) fn lifeline_setsockopt(ctx: SockoptContext) -> i32 {
    run::<true>(&ctx)
}

/// Linux 5.3 to 5.14, which have no `bpf_get_netns_cookie` in this hook: a socket of
/// another namespace with the very addresses and ports of a watched one would be merged too
/// (keepalive only, and only ever stricter).
#[cgroup_sockopt(setsockopt)]
pub(crate) fn lifeline_setsockopt_any_netns(ctx: SockoptContext) -> i32 {
    run::<false>(&ctx)
}

fn run<const NETNS: bool>(ctx: &SockoptContext) -> i32 {
    // SAFETY: the context pointer the kernel passed in.
    let o = unsafe { &mut *ctx.sockopt };
    if o.optlen > PAGE {
        o.optlen = 0;
        return 1;
    }
    let _ = try_setsockopt::<NETNS>(ctx);
    // 1: let the call proceed (0 would fail it with EPERM); only its value may change.
    1
}

fn try_setsockopt<const NETNS: bool>(ctx: &SockoptContext) -> Option<()> {
    // SAFETY: the context pointer the kernel passed in.
    let o = unsafe { &mut *ctx.sockopt };
    let ours = matches!(
        (o.level, o.optname),
        (SOL_SOCKET, SO_KEEPALIVE)
            | (
                SOL_TCP,
                TCP_KEEPIDLE | TCP_KEEPINTVL | TCP_KEEPCNT | TCP_USER_TIMEOUT
            )
    );
    if !ours || o.optlen < 4 {
        return None;
    }
    // SAFETY: `sk` is the (non-null) socket of the call.
    let sk = unsafe { o.__bindgen_anon_1.sk };
    let key = key(sk)?;
    if NETNS {
        // SAFETY: the helper reads the namespace of the context's socket.
        let netns = unsafe { bpf_get_netns_cookie(ctx.sockopt.cast()) };
        if CONFIG.get(0).map(|c| c.netns_cookie) != Some(netns) {
            return None;
        }
    }
    let app = TUPLES.get_ptr_mut(key)?;
    // SAFETY: map value of the right type; the socket is locked for the call.
    let app = unsafe { &mut *app };
    let rec = SOCKETS.get_ptr_mut(app.cookie)?;
    // SAFETY: as above.
    let rec = unsafe { &mut *rec };
    let want = KEEPALIVE.get(0)?;
    if want.idle_s == 0 || !ka_armed(rec.ka_result) {
        return None;
    }
    // SAFETY: both bounds come from the context; the check below keeps the read inside.
    let (val, end) = unsafe { (o.__bindgen_anon_2.optval, o.__bindgen_anon_3.optval_end) };
    let val = val.cast::<i32>();
    // SAFETY: pointer arithmetic only, compared before any access.
    if unsafe { val.add(1) }.cast() > end {
        return None;
    }
    // SAFETY: four bytes inside [optval, optval_end), checked above.
    let asked = unsafe { read_volatile(val) };
    #[allow(clippy::cast_sign_loss, reason = "checked positive first")]
    let asked_u = if asked > 0 { asked as u32 } else { 0 };
    app.calls += 1;
    let before = rec.keepalive;
    let keepalive_flag = o.level == SOL_SOCKET && o.optname == SO_KEEPALIVE;
    if o.optname == TCP_USER_TIMEOUT && o.level == SOL_TCP {
        // Let through as asked (0 is "none"; negative values the kernel refuses): only noted,
        // as the application's own from now on, and what is in force.
        if asked >= 0 {
            user_timeout(app.cookie, asked_u, rec);
        }
        return None;
    }
    // Out of range (a count or time of 0 or less): the kernel refuses it with EINVAL, as it
    // would without us.
    if !keepalive_flag && asked_u == 0 {
        return None;
    }
    let new = if rec.defer > 0 {
        // Deferred while lifeline only observes: the values in force stay (re-merged, a count
        // below the probes already out would abort the socket at the next timer); the
        // agent re-plans from the application's new value (the news below).
        in_force(o.optname, rec)?
    } else {
        merged(o.optname, o.level, asked_u, app, rec, want)?
    };
    // What the application asked for is its own value from now on: the one the restore at
    // stop puts back (`lifeline_common::restore`).
    if let Some(orig) = ORIGINALS.get_ptr_mut(app.cookie) {
        // SAFETY: map value of the right type; the socket is locked for the call.
        let orig = unsafe { &mut *orig };
        let bit = option_bit(o.optname);
        // Any non-zero `SO_KEEPALIVE` turns it on (`sk_setsockopt()`).
        let value = if keepalive_flag {
            u32::from(asked != 0)
        } else {
            asked_u
        };
        orig.note(bit, Some(value));
        orig.mark(bit, new);
    }
    #[allow(clippy::cast_possible_wrap, reason = "kernel-bounded option values")]
    // SAFETY: the same four checked bytes.
    unsafe {
        val.write_volatile(new as i32);
    };
    // News only when the values in force changed, or the socket is deferred (the agent
    // re-plans): the agent's copy follows it, and a loop of the same call on a watched
    // socket (anyone's, for an endpoint client) must not flood the ring buffer, where it
    // would push out other sockets' news.
    if rec.keepalive != before || rec.defer > 0 {
        news(app.cookie, news::KEEPALIVE, 0);
    }
    Some(())
}

/// The application set its own `TCP_USER_TIMEOUT` (let through): the original from now on,
/// in force, and news (a deferred socket is re-planned with it).
fn user_timeout(cookie: u64, asked: u32, rec: &mut SockState) {
    if let Some(orig) = ORIGINALS.get_ptr_mut(cookie) {
        // SAFETY: map value of the right type; the socket is locked for the call.
        let orig = unsafe { &mut *orig };
        orig.note(opt::USER_TIMEOUT, Some(asked));
        orig.mark(opt::USER_TIMEOUT, asked);
    }
    if rec.keepalive.user_timeout_ms != asked {
        rec.keepalive.user_timeout_ms = asked;
        news(cookie, news::KEEPALIVE, 0);
    }
}

/// The option's bit in `lifeline_common::restore::opt` (only keepalive options get here).
const fn option_bit(optname: i32) -> u32 {
    match optname {
        TCP_KEEPIDLE => opt::IDLE,
        TCP_KEEPINTVL => opt::INTVL,
        TCP_KEEPCNT => opt::CNT,
        _ => opt::KEEPALIVE,
    }
}

/// The application's value merged with lifeline's (`lifeline_common::sockopt`), written into
/// the record; `None` for a value out of range (the kernel refuses it with EINVAL, as it
/// would without us).
fn merged(
    optname: i32,
    level: i32,
    asked: u32,
    app: &mut AppSet,
    rec: &mut SockState,
    want: &Keepalive,
) -> Option<u32> {
    Some(match optname {
        // Turning keepalive off on a watched socket would blind lifeline to a dead peer.
        SO_KEEPALIVE if level == SOL_SOCKET => 1,
        TCP_KEEPIDLE if asked > 0 => {
            rec.keepalive.idle_s = shorter(asked, want.idle_s);
            rec.keepalive.idle_s
        }
        TCP_KEEPINTVL if asked > 0 => {
            app.intvl_s = asked;
            rec.keepalive.intvl_s = shorter(asked, want.intvl_s);
            rec.keepalive.intvl_s
        }
        TCP_KEEPCNT if asked > 0 => {
            rec.keepalive.cnt = count(asked, app.intvl_s, want);
            rec.keepalive.cnt
        }
        _ => return None,
    })
}

/// The value in force on a deferred socket (`SockState::defer`).
fn in_force(optname: i32, rec: &SockState) -> Option<u32> {
    Some(match optname {
        SO_KEEPALIVE => u32::from(rec.defer != DEFER_OFF_STATE),
        TCP_KEEPIDLE => rec.keepalive.idle_s,
        TCP_KEEPINTVL => rec.keepalive.intvl_s,
        TCP_KEEPCNT => rec.keepalive.cnt,
        _ => return None,
    })
}

/// `SockState::defer` of a socket whose keepalive is off while deferred.
#[allow(clippy::cast_possible_wrap, reason = "a small constant")]
const DEFER_OFF_STATE: i32 = DEFER_OFF as i32;

/// The socket's addresses as the `TUPLES` key; `None` for anything but a TCP/IP socket.
fn key(sk: *mut bpf_sock) -> Option<SockKey> {
    // SAFETY: context-derived socket pointer; each field is one verifier-rewritten load.
    unsafe {
        let family = read_volatile(&raw const (*sk).family);
        if read_volatile(&raw const (*sk).protocol) != IPPROTO_TCP {
            return None;
        }
        // `dst_port` is network order in the low 16 bits of a 4-byte load on every kernel
        // (a u32 before 6.0, a __be16 with a 4-byte compatible load since).
        #[allow(
            clippy::cast_ptr_alignment,
            reason = "dst_port starts a 4-byte slot of struct bpf_sock on every kernel"
        )]
        let dport = read_volatile((&raw const (*sk).dst_port).cast::<u32>());
        #[allow(clippy::cast_possible_truncation, reason = "16-bit ports")]
        let mut k = SockKey {
            family: family as u16,
            local_port: read_volatile(&raw const (*sk).src_port) as u16,
            peer_port: u16::from_be(dport as u16),
            ..SockKey::default()
        };
        if family == AF_INET {
            let (l, p) = (
                read_volatile(&raw const (*sk).src_ip4),
                read_volatile(&raw const (*sk).dst_ip4),
            );
            k.local[..4].copy_from_slice(&l.to_ne_bytes());
            k.peer[..4].copy_from_slice(&p.to_ne_bytes());
        } else if family == AF_INET6 {
            for i in 0..4 {
                let l = read_volatile(&raw const (*sk).src_ip6[i]);
                let p = read_volatile(&raw const (*sk).dst_ip6[i]);
                k.local[i * 4..i * 4 + 4].copy_from_slice(&l.to_ne_bytes());
                k.peer[i * 4..i * 4 + 4].copy_from_slice(&p.to_ne_bytes());
            }
        } else {
            return None;
        }
        Some(k)
    }
}
