//! `cgroup/connect4` and `cgroup/connect6` on the cgroup v2 root: remember who connects to
//! a watched port from the agent's network namespace, and whether that task is a target.
//!
//! These run in the connecting task's context, the one place where pid, comm and cgroup are
//! the socket's owner's (`sock_ops` runs mostly in softirq context). They run for every
//! connect on the host, so the port lookup comes first and everything else only after it.
//! They always allow the connect (return 1), except the agent's own calibration socket.

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
    watch::{BY_CGROUP, BY_COMM, MAX_CGROUP_DEPTH, WATCH_CGROUPS, WATCH_COMMS, WATCH_ENDPOINT},
};

use crate::maps::{COMMS, OWNERS, PORTS, TARGET_CGROUPS, config};

const IPPROTO_TCP: u32 = 6;
/// Allow the connect.
const ALLOW: i32 = 1;
/// Refuse it with EPERM before any packet is sent (the calibration socket only).
const REFUSE: i32 = 0;

#[cgroup_sock_addr(connect4)]
pub fn lifeline_connect4(ctx: SockAddrContext) -> i32 {
    record_owner(&ctx)
}

#[cgroup_sock_addr(connect6)]
pub fn lifeline_connect6(ctx: SockAddrContext) -> i32 {
    record_owner(&ctx)
}

fn record_owner(ctx: &SockAddrContext) -> i32 {
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
    // No reason, and no peer that could give one at ESTABLISHED: `sock_ops` would find the
    // entry and drop it unread, so the insert (the dearest step here, about a microsecond)
    // is skipped. This is every other connect of the node to a watched port.
    if reasons == 0 && cfg.flags & WATCH_ENDPOINT == 0 {
        return ALLOW;
    }
    #[allow(
        clippy::cast_possible_truncation,
        reason = "upper half of pid_tgid is the tgid"
    )]
    let pid = (bpf_get_current_pid_tgid() >> 32) as u32;
    // Recorded even with no reason yet when endpoint clients are watched: its peer may make
    // it one at ESTABLISHED, and the record says it was born in our namespace. An LRU map
    // evicts the oldest entry instead of failing, so this cannot fill up.
    // SAFETY: the helper reads the socket behind the context.
    let cookie = unsafe { bpf_get_socket_cookie(ctx.sock_addr.cast()) };
    let _ = OWNERS.insert(cookie, Owner { pid, reasons, comm }, 0);
    ALLOW
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
