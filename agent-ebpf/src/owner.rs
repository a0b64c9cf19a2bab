//! `cgroup/connect4` and `cgroup/connect6` on the cgroup v2 root: remember who connects to
//! a watched port from the agent's network namespace, and whether that task is a target;
//! record nothing for a connect that can never become one.
//!
//! These run in the connecting task's context, the one place where pid, comm and cgroup are
//! the socket's owner's (`sock_ops` runs mostly in softirq context). They run for every
//! connect on the host, so the port lookup comes first and everything else only after it.
//! They always allow the connect (return 1), except the agent's own calibration socket.

use core::ptr::read_volatile;

use aya_ebpf::{
    helpers::{
        bpf_get_current_ancestor_cgroup_id, bpf_get_current_comm, bpf_get_current_pid_tgid,
        bpf_get_netns_cookie, bpf_get_socket_cookie,
    },
    macros::cgroup_sock_addr,
    programs::SockAddrContext,
};
use lifeline_common::{
    Owner,
    config::stats,
    watch::{
        BY_CGROUP, BY_COMM, MAX_CGROUP_DEPTH, PeerKey, WATCH_CGROUPS, WATCH_COMMS, WATCH_ENDPOINT,
    },
};

use crate::maps::{
    COMMS, ENDPOINT_PEERS, OWNERS, PEER_OWNERS, PORTS, TARGET_CGROUPS, config, count,
};

const IPPROTO_TCP: u32 = 6;
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;
/// Allow the connect.
const ALLOW: i32 = 1;
/// Refuse it with EPERM before any packet is sent (the calibration socket only).
const REFUSE: i32 = 0;

#[cgroup_sock_addr(connect4)]
pub(crate) fn lifeline_connect4(ctx: SockAddrContext) -> i32 {
    record_owner::<false>(&ctx)
}

#[cgroup_sock_addr(connect6)]
pub(crate) fn lifeline_connect6(ctx: SockAddrContext) -> i32 {
    record_owner::<true>(&ctx)
}

fn record_owner<const V6: bool>(ctx: &SockAddrContext) -> i32 {
    // SAFETY: `sock_addr` is the context pointer the kernel passed in.
    let (protocol, user_port) = unsafe { ((*ctx.sock_addr).protocol, (*ctx.sock_addr).user_port) };
    // `user_port` holds the port in network byte order in its low 16 bits.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "the port is the low 16 bits"
    )]
    let port = u16::from_be(user_port as u16);
    if protocol != IPPROTO_TCP || PORTS.get_ptr(port).is_none() {
        return ALLOW;
    }
    let Some(cfg) = config() else { return ALLOW };
    // SAFETY: the helper reads the namespace behind the context.
    let netns = unsafe { bpf_get_netns_cookie(ctx.sock_addr.cast()) };
    // SAFETY: the one `CONFIG` slot; the agent writes it before it calibrates.
    let cfg = unsafe { &mut *cfg };
    // The agent zeroes the namespace before it calibrates (`begin_calibration`), so only then
    // can this be its calibration socket; otherwise the socket's cookie is generated only
    // for a socket that is recorded below, never for the node's other connects.
    if cfg.netns_cookie == 0 {
        // SAFETY: the helper reads the socket behind the context.
        if unsafe { bpf_get_socket_cookie(ctx.sock_addr.cast()) } == cfg.calibrate_cookie {
            cfg.netns_cookie = netns;
            return REFUSE;
        }
        return ALLOW;
    }
    if netns != cfg.netns_cookie {
        return ALLOW;
    }
    let Ok(comm) = bpf_get_current_comm() else {
        return ALLOW;
    };
    let mut reasons = 0;
    if cfg.flags & WATCH_CGROUPS != 0 && in_target_cgroup(cfg.cgroup_levels) {
        reasons |= BY_CGROUP;
    }
    if cfg.flags & WATCH_COMMS != 0 && COMMS.get_ptr(comm).is_some() {
        reasons |= BY_COMM;
    }
    // Decided here, where the destination is known, so that only connects that can matter
    // take an entry: a target's goes to `OWNERS`; one with no reason only if it goes to one
    // of the endpoint's addresses (its peer makes it a target at ESTABLISHED), and then to
    // `PEER_OWNERS`, where a flood of them cannot evict a target's entry. Every other
    // connect to a watched port (the node's other traffic, or a neighbour's loop of refused
    // connects to 127.0.0.1) is only counted: `sock_ops` would find no reason for it.
    if reasons == 0 && (cfg.flags & WATCH_ENDPOINT == 0 || !to_endpoint::<V6>(ctx, port)) {
        count(stats::OWNERS_SKIPPED);
        return ALLOW;
    }
    #[allow(
        clippy::cast_possible_truncation,
        reason = "upper half of pid_tgid is the tgid"
    )]
    let pid = (bpf_get_current_pid_tgid() >> 32) as u32;
    // The entry also says the socket was born in our namespace (`sock_ops` has no namespace
    // helper on 5.10). An LRU map evicts the oldest entry instead of failing.
    // SAFETY: the helper reads the socket behind the context.
    let cookie = unsafe { bpf_get_socket_cookie(ctx.sock_addr.cast()) };
    let owner = Owner { pid, reasons, comm };
    // One call per map, not a pointer chosen between them: each helper call then has a
    // constant map for the verifier.
    let _ = if reasons == 0 {
        PEER_OWNERS.insert(cookie, owner, 0)
    } else {
        OWNERS.insert(cookie, owner, 0)
    };
    ALLOW
}

/// Whether the connect's destination is one of the endpoint's addresses (`ENDPOINT_PEERS`),
/// as the caller gave it (`user_ip4`/`user_ip6`, network order; the key `sock_ops` builds
/// from the same address at ESTABLISHED). Each program reads only its own family's field:
/// the verifier refuses `user_ip6` in `connect4` and the other way round
/// (`sock_addr_is_valid_access()` in
/// <https://github.com/torvalds/linux/blob/v6.18/net/core/filter.c>).
fn to_endpoint<const V6: bool>(ctx: &SockAddrContext, port: u16) -> bool {
    let a = ctx.sock_addr;
    let mut key = PeerKey {
        port,
        family: if V6 { AF_INET6 } else { AF_INET },
        ..PeerKey::default()
    };
    if V6 {
        for i in 0..4 {
            // SAFETY: a context field read, one verifier-rewritten load each.
            let w = unsafe { read_volatile(&raw const (*a).user_ip6[i]) };
            key.addr[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
        }
    } else {
        // SAFETY: as above.
        let w = unsafe { read_volatile(&raw const (*a).user_ip4) };
        key.addr[..4].copy_from_slice(&w.to_ne_bytes());
    }
    ENDPOINT_PEERS.get_ptr(key).is_some()
}

/// Whether the current task's cgroup, or one of its ancestors, is a target. Only the levels
/// where a target sits (`levels`, one bit each; usually a single one, level 2 for
/// `/system.slice/kubelet.service`) are asked: one helper call and one lookup per connect
/// rather than up to 16 of each. The helper returns 0 past the task's own level
/// (<https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/helpers.c>,
/// `bpf_get_current_ancestor_cgroup_id`; in connect hooks since 5.7).
fn in_target_cgroup(levels: u32) -> bool {
    for level in 0..MAX_CGROUP_DEPTH {
        if levels >> level == 0 {
            return false;
        }
        if levels & (1 << level) == 0 {
            continue;
        }
        // SAFETY: no pointers involved.
        let id = unsafe { bpf_get_current_ancestor_cgroup_id(level) };
        if id == 0 {
            return false;
        }
        if TARGET_CGROUPS.get_ptr(id).is_some() {
            return true;
        }
    }
    false
}
