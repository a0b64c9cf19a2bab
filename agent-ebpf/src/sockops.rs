//! `sock_ops` on the cgroup v2 root: the heart of the probe.
//!
//! At ESTABLISHED a target socket (`lifeline_common::watch`) is recorded and armed with the RTO,
//! RETRANS and STATE callbacks: the ones that carry news. From then on the kernel calls us
//! only for those events on that socket: a retransmission or RTO means data went unanswered
//! (trouble), a state change may end the record. A healthy bulk flow runs nothing: no
//! callback per ACK (the RTT one is not armed; the agent asks the kernel's `tcp_info` when it
//! needs the last ACK). Each change of a record is pushed to the agent (`NEWS`), a few
//! events per socket lifetime. Callers: `tcp_call_bpf()` in
//! <https://github.com/torvalds/linux/blob/v6.18/include/net/tcp.h>,
//! `tcp_retransmit_timer()`/`tcp_write_timeout()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c> and
//! `__tcp_retransmit_skb()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_output.c>.

use core::ptr::read_volatile;

use aya_ebpf::{
    bindings::{
        BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB, BPF_SOCK_OPS_RETRANS_CB, BPF_SOCK_OPS_RTO_CB,
        BPF_SOCK_OPS_STATE_CB, BPF_TCP_CLOSE,
    },
    helpers::{bpf_get_socket_cookie, bpf_ktime_get_ns},
    macros::sock_ops,
    programs::SockOpsContext,
};
use aya_log_ebpf::error;
use lifeline_common::{
    Owner, SockState,
    config::stats,
    news,
    restore::{Original, opt},
    sock::{SOURCE_SOCK_OPS, WATCH_CB_FLAGS},
    sockopt::{AppSet, SockKey},
    watch::{BY_ENDPOINT, PeerKey, WATCH_ENDPOINT},
};

use crate::{
    keepalive, linear,
    maps::{
        ADOPT, DEFER, ENDPOINT_PEERS, ENDPOINT_QUOTA, ORIGINALS, OWNERS, PEER_OWNERS, PORTS,
        SCRATCH, SOCKETS, TUPLES, config_flag, count, news,
    },
};

const AF_INET: u32 = 2;
const TCP_ESTABLISHED: u8 = 1;
/// `BPF_NOEXIST` (<https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/bpf.h>).
const BPF_NOEXIST: u64 = 1;

#[sock_ops]
pub(crate) fn lifeline_sockops(ctx: SockOpsContext) -> u32 {
    match ctx.op() {
        BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB => on_established(&ctx),
        BPF_SOCK_OPS_RTO_CB => on_trouble(&ctx, true),
        BPF_SOCK_OPS_RETRANS_CB => on_trouble(&ctx, false),
        BPF_SOCK_OPS_STATE_CB => on_state(&ctx),
        _ => {}
    }
    // 1: "handled"; the value only matters for ops that ask for a reply, which we ignore.
    1
}

fn cookie(ctx: &SockOpsContext) -> u64 {
    // SAFETY: the helper reads the socket behind the context pointer.
    unsafe { bpf_get_socket_cookie(ctx.ops.cast()) }
}

fn now() -> u64 {
    // SAFETY: no arguments, no side effects.
    unsafe { bpf_ktime_get_ns() }
}

fn on_established(ctx: &SockOpsContext) {
    // `remote_port` is the network-order port in the upper 16 bits (see
    // `sock_ops_convert_ctx_access()` in net/core/filter.c).
    #[allow(clippy::cast_possible_truncation, reason = "a port is 16 bits")]
    let port = u32::from_be(ctx.remote_port()) as u16;
    if PORTS.get_ptr(port).is_none() {
        return;
    }
    let cookie = cookie(ctx);
    // No owner record in either map: the connect did not come from the agent's namespace,
    // could never be a target (`crate::owner` skipped it), or predates the agent (adopted
    // through sock_diag instead). The entry is the only sign of the namespace here:
    // `bpf_get_netns_cookie` reaches `sock_ops` only in 5.15.
    let Some(owner) = take_owner(cookie) else {
        return;
    };
    let ip = Addresses::read(ctx);
    let mut reasons = owner.reasons;
    if config_flag(WATCH_ENDPOINT) && is_endpoint_peer(ctx.family(), &ip, port) {
        reasons |= BY_ENDPOINT;
    }
    if reasons == 0 {
        // Not a target: nothing is recorded or armed on it, it costs nothing from here on.
        return;
    }
    // Only its peer makes it a target: any process's connection to the API address, so it
    // may hold only its share of `SOCKETS`, and targets keep the rest.
    let peer_only = reasons == BY_ENDPOINT;
    if peer_only && ENDPOINT_QUOTA.insert(cookie, 1, BPF_NOEXIST).is_err() {
        count(stats::ENDPOINT_QUOTA_FULL);
        return;
    }
    let Some(s) = SCRATCH.get_ptr_mut(0) else {
        if peer_only {
            let _ = ENDPOINT_QUOTA.remove(cookie);
        }
        return;
    };
    // SAFETY: this CPU's slot; nothing else runs on this CPU while the program does.
    let s = unsafe { &mut *s };
    *s = SockState::default();
    let now = now();
    s.established_ns = now;
    s.last_ack_ns = now;
    s.peer_port = port;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "local_port is host-order 16 bits"
    )]
    let local_port = ctx.local_port() as u16;
    s.local_port = local_port;
    #[allow(clippy::cast_possible_truncation, reason = "AF_INET/AF_INET6")]
    let family = ctx.family() as u16;
    s.family = family;
    s.source = SOURCE_SOCK_OPS;
    s.state = TCP_ESTABLISHED;
    if ctx.family() == AF_INET {
        s.local_addr[..4].copy_from_slice(&ip.local4.to_ne_bytes());
        s.peer_addr[..4].copy_from_slice(&ip.remote4.to_ne_bytes());
    } else {
        copy_ip6(&mut s.local_addr, ip.local6);
        copy_ip6(&mut s.peer_addr, ip.remote6);
    }
    s.owner_pid = owner.pid;
    s.owner_comm = owner.comm;
    s.reasons = reasons;
    refresh(s, ctx);
    // By reference: a copy would put the record back on the stack `SCRATCH` keeps it off.
    #[allow(
        clippy::needless_borrows_for_generic_args,
        reason = "the value must stay in the scratch map, not be copied to the stack"
    )]
    let inserted = SOCKETS.insert(cookie, &*s, 0);
    if inserted.is_err() {
        if peer_only {
            let _ = ENDPOINT_QUOTA.remove(cookie);
        }
        // Loud, never silent: the agent reports this counter and logs every drop.
        count(stats::SOCKETS_FULL);
        error!(
            ctx,
            "SOCKETS map full: socket {} to port {} is NOT watched", cookie, port
        );
        return;
    }
    // So the `setsockopt` hook finds the record when the application sets its own keepalive
    // after connect (`crate::sockopt`). Full: that hook leaves the socket's options alone.
    let _ = TUPLES.insert(
        SockKey::of(s),
        AppSet {
            cookie,
            ..AppSet::default()
        },
        0,
    );
    arm(ctx, cookie);
    count(stats::WATCHED);
    news(cookie, news::ESTABLISHED, 0);
}

/// Set the callback flags and arm keepalive and linear timeouts on a socket just recorded,
/// noting first what it had (`ORIGINALS`, for the restore at stop). Armed only once the
/// socket is recorded: nothing is changed on a socket we do not watch.
fn arm(ctx: &SockOpsContext, cookie: u64) {
    // What the socket had before lifeline changed anything, for the restore at stop
    // (`lifeline_common::restore`). Full: armed all the same, and that socket is counted as
    // not restored at stop.
    #[allow(
        clippy::needless_borrows_for_generic_args,
        reason = "a reference to the promoted constant: no 48-byte copy on the BPF stack"
    )]
    let _ = ORIGINALS.insert(cookie, &Original::NONE, 0);
    let orig = ORIGINALS.get_ptr_mut(cookie);
    let before = ctx.cb_flags();
    #[allow(clippy::cast_possible_wrap, reason = "the flags fit in 7 bits")]
    let flags = (before | WATCH_CB_FLAGS) as i32;
    let armed = ctx.set_cb_flags(flags).is_ok();
    if let (Some(rec), Some(orig)) = (SOCKETS.get_ptr_mut(cookie), orig) {
        // SAFETY: map values of the right types, under the socket's lock.
        let (rec, orig) = unsafe { (&mut *rec, &mut *orig) };
        orig.note(opt::CALLBACKS, Some(before));
        if armed {
            orig.mark(opt::CALLBACKS, before | WATCH_CB_FLAGS);
        }
        rec.ka_result = keepalive::arm(ctx.ops.cast(), &mut rec.keepalive, orig);
        rec.lto = linear::arm(ctx.ops.cast(), orig);
    }
}

/// The socket's owner entry, from `OWNERS` (targets) or `PEER_OWNERS` (connects to an
/// endpoint address), removed there. Copied into the record from here on: the entry goes
/// now, not at close, so the maps hold only connects in flight. Every `connect4` insert
/// rotates the LRU lists
/// (<https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/bpf_lru_list.c>,
/// `__bpf_lru_list_rotate`), and with every watched socket's entry kept there it walked
/// cold nodes: over a microsecond per connect.
fn take_owner(cookie: u64) -> Option<Owner> {
    // SAFETY: plain-old-data copied out of the map value.
    if let Some(o) = OWNERS.get_ptr(cookie).map(|o| unsafe { *o }) {
        let _ = OWNERS.remove(cookie);
        return Some(o);
    }
    // SAFETY: as above.
    let o = PEER_OWNERS.get_ptr(cookie).map(|o| unsafe { *o })?;
    let _ = PEER_OWNERS.remove(cookie);
    Some(o)
}

/// Every address field, read up front with one volatile load each. Context fields are
/// rewritten by the verifier and must be loaded at a constant offset from the context
/// pointer; left alone, LLVM merges the IPv4 and IPv6 branches into one load through a
/// computed pointer, which the verifier rejects ("dereference of modified ctx ptr").
struct Addresses {
    local4: u32,
    remote4: u32,
    local6: [u32; 4],
    remote6: [u32; 4],
}

impl Addresses {
    fn read(ctx: &SockOpsContext) -> Self {
        let o = ctx.ops;
        // SAFETY: `o` is the context pointer; each load is a plain context field read.
        unsafe {
            Self {
                local4: read_volatile(&raw const (*o).local_ip4),
                remote4: read_volatile(&raw const (*o).remote_ip4),
                local6: [
                    read_volatile(&raw const (*o).local_ip6[0]),
                    read_volatile(&raw const (*o).local_ip6[1]),
                    read_volatile(&raw const (*o).local_ip6[2]),
                    read_volatile(&raw const (*o).local_ip6[3]),
                ],
                remote6: [
                    read_volatile(&raw const (*o).remote_ip6[0]),
                    read_volatile(&raw const (*o).remote_ip6[1]),
                    read_volatile(&raw const (*o).remote_ip6[2]),
                    read_volatile(&raw const (*o).remote_ip6[3]),
                ],
            }
        }
    }
}

/// Whether the peer is one of the endpoint's addresses (`ENDPOINT_PEERS`).
fn is_endpoint_peer(family: u32, ip: &Addresses, port: u16) -> bool {
    let mut key = PeerKey {
        port,
        #[allow(clippy::cast_possible_truncation, reason = "AF_INET/AF_INET6")]
        family: family as u16,
        ..PeerKey::default()
    };
    if family == AF_INET {
        key.addr[..4].copy_from_slice(&ip.remote4.to_ne_bytes());
    } else {
        copy_ip6(&mut key.addr, ip.remote6);
    }
    ENDPOINT_PEERS.get_ptr(key).is_some()
}

fn copy_ip6(dst: &mut [u8; 16], words: [u32; 4]) {
    for (i, w) in words.iter().enumerate() {
        dst[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
    }
}

/// Copy the counters the kernel exposes in `struct bpf_sock_ops` (stable UAPI fields,
/// rewritten by the verifier into `tcp_sock` loads, so no CO-RE is needed).
fn refresh(s: &mut SockState, ctx: &SockOpsContext) {
    // SAFETY: `ops` is the context pointer the kernel passed in.
    let o = unsafe { &*ctx.ops };
    s.snd_una = o.snd_una;
    s.snd_nxt = o.snd_nxt;
    s.packets_out = o.packets_out;
    s.bytes_acked = o.bytes_acked;
    s.bytes_received = o.bytes_received;
}

fn on_trouble(ctx: &SockOpsContext, rto: bool) {
    let cookie = cookie(ctx);
    let Some(s) = SOCKETS.get_ptr_mut(cookie) else {
        return;
    };
    // SAFETY: map value of the right type; callbacks for one socket run under its lock.
    let s = unsafe { &mut *s };
    let now = now();
    // SAFETY: context pointer.
    if unsafe { (*ctx.ops).snd_una } != s.snd_una {
        // The peer acknowledged something since the last callback: the previous episode (if
        // any) ended in progress, and this is a new one.
        s.last_ack_ns = now;
        s.rto_count = 0;
        s.retrans_count = 0;
        s.trouble_ns = 0;
    }
    let first = s.trouble_ns == 0;
    if first {
        s.trouble_ns = now;
    }
    if rto {
        s.rto_count += 1;
        // SAFETY: context pointer.
        linear::at_rto(ctx.ops.cast(), cookie, s, unsafe {
            (*ctx.ops).snd_ssthresh
        });
    } else {
        s.retrans_count += 1;
    }
    refresh(s, ctx);
    // The episode's start, and each RTO after it: the stall verdict counts RTOs in a row
    // (`--stall-unanswered`), and with linear timeouts they come every ~200 ms, faster
    // than the agent's sweep. At most one item per RTO of a socket in trouble, none while
    // it is healthy, and none for loss recovery the peer itself drives.
    // SAFETY: context pointer.
    if news::trouble_is_news(first, rto, unsafe { (*ctx.ops).sacked_out }) {
        news(cookie, news::TROUBLE, s.rto_count);
    }
}

fn on_state(ctx: &SockOpsContext) {
    let cookie = cookie(ctx);
    let new_state = ctx.arg(1);
    if new_state == BPF_TCP_CLOSE {
        if let Some(rec) = SOCKETS.get_ptr(cookie) {
            // SAFETY: map value of the right type, read under the socket's lock.
            let key = SockKey::of(unsafe { &*rec });
            let _ = TUPLES.remove(key);
        }
        // Only a recorded socket is news; the others were never the agent's business.
        if SOCKETS.remove(cookie).is_ok() {
            let _ = ENDPOINT_QUOTA.remove(cookie);
            let _ = ORIGINALS.remove(cookie);
            let _ = DEFER.remove(cookie);
            news(cookie, news::CLOSE, 0);
        }
        let _ = ADOPT.remove(cookie);
    } else if let Some(s) = SOCKETS.get_ptr_mut(cookie) {
        #[allow(clippy::cast_possible_truncation, reason = "TCP states are < 16")]
        // SAFETY: map value of the right type; callbacks for one socket run under its lock.
        unsafe {
            (*s).state = new_state as u8;
        }
        news(cookie, news::STATE, 0);
    }
}
