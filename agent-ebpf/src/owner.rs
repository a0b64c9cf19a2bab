//! `cgroup/connect4` and `cgroup/connect6`: remember who connects to a watched port.
//!
//! These run in the connecting task's context, the one place where pid and comm are
//! the socket's owner. They always allow the connect (return 1): lifeline observes, it
//! never blocks traffic.

use aya_ebpf::{
    helpers::{bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_get_socket_cookie},
    macros::cgroup_sock_addr,
    programs::SockAddrContext,
};
use lifeline_common::{Owner, config::CONFIG_COMM_FILTER};

use crate::maps::{COMMS, OWNERS, PORTS, config_flag};

const IPPROTO_TCP: u32 = 6;

#[cgroup_sock_addr(connect4)]
pub fn lifeline_connect4(ctx: SockAddrContext) -> i32 {
    record_owner(&ctx);
    1
}

#[cgroup_sock_addr(connect6)]
pub fn lifeline_connect6(ctx: SockAddrContext) -> i32 {
    record_owner(&ctx);
    1
}

fn record_owner(ctx: &SockAddrContext) {
    // SAFETY: `sock_addr` is the context pointer the kernel passed in.
    let (protocol, user_port) = unsafe { ((*ctx.sock_addr).protocol, (*ctx.sock_addr).user_port) };
    // `user_port` holds the port in network byte order in its low 16 bits.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "the port is the low 16 bits"
    )]
    let port = u16::from_be(user_port as u16);
    if protocol != IPPROTO_TCP || PORTS.get_ptr(port).is_none() {
        return;
    }
    let Ok(comm) = bpf_get_current_comm() else {
        return;
    };
    let watched = !config_flag(CONFIG_COMM_FILTER) || COMMS.get_ptr(comm).is_some();
    #[allow(
        clippy::cast_possible_truncation,
        reason = "upper half of pid_tgid is the tgid"
    )]
    let pid = (bpf_get_current_pid_tgid() >> 32) as u32;
    let owner = Owner {
        pid,
        watched: u32::from(watched),
        comm,
    };
    // SAFETY: the helper only reads the socket behind the context.
    let cookie = unsafe { bpf_get_socket_cookie(ctx.sock_addr.cast()) };
    // An LRU map evicts the oldest entry instead of failing, so this cannot fill up.
    let _ = OWNERS.insert(cookie, owner, 0);
}
