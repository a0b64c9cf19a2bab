//! lifeline's kernel probe. Program types and the oldest kernel each needs, as
//! `lifeline_common::features` lists them and the kernel matrix (`cargo xtask test --kernel
//! all`, docs/KERNELS.md) measured them on 5.10, 6.1 and 6.12:
//!
//! | program | hook | minimum kernel |
//! |---|---|---|
//! | `lifeline_sockops` | `sock_ops` on the cgroup v2 root: ESTABLISHED of target sockets, then their RTO, RETRANS and STATE callbacks, each change pushed into the `NEWS` ring buffer | 5.8 (the ring buffer; the callbacks 4.16, `bpf_get_socket_cookie` there 4.19) |
//! | `lifeline_connect4/6` | `cgroup/connect4`, `cgroup/connect6` on the root: owner pid, comm, target cgroup, network namespace | 5.7 (`bpf_get_netns_cookie`, `bpf_get_current_ancestor_cgroup_id` there; loads and works on 5.10) |
//! | `lifeline_cgroup_mkdir/rmdir` | tracepoints `cgroup:cgroup_mkdir`/`cgroup_rmdir`: a re-created target cgroup is a target before its first process runs | 5.5 (u64 ids in the record; same layout on 5.10 to 6.18) |
//! | `lifeline_sockops` + `bpf_{get,set}sockopt` | keepalive / `TCP_USER_TIMEOUT` on watched sockets | 5.9 set; 6.1 read first, lowering only (before: set without reading) |
//! | `lifeline_sockops` + `bpf_setsockopt(TCP_THIN_LINEAR_TIMEOUTS)` | linear retransmission timeouts on watched thin streams: the stall verdict's unanswered transmissions come at a fixed cadence | 6.1 (5.10: EINVAL; the stall verdict then waits for `--stall-timeout`) |
//! | `lifeline_setsockopt` | `cgroup/setsockopt` on the root: an application's own keepalive calls on a watched socket (Go sets them after connect) merged with lifeline's | 5.3 (`bpf_get_netns_cookie` there 5.15; a variant without it before) |
//! | `lifeline_unanswered`, else `lifeline_unanswered_timer` | `fentry/tcp_write_wakeup`, else `tp_btf/timer_expire_entry` filtered to `tcp_keepalive_timer` (kernels that refuse fentry; its address from /proc/kallsyms, else read by `lifeline_adopt` from a TCP socket of the agent's, 5.12): a watched idle socket's keepalive probes unanswered past `max(1, --silent-probes - 2)` are news (offsets from the kernel's BTF) | 5.8 (fentry, `tp_btf` and `bpf_probe_read_kernel` 5.5, the news ring buffer 5.8); without it idle sockets are read through `sock_diag` on a schedule |
//! | `lifeline_adopt` | `iter/tcp` + `bpf_setsockopt`: keepalive on sockets that predate the agent; their callbacks (`TCP_BPF_SOCK_OPS_CB_FLAGS`); the fast phase's pokes (`TCP_KEEPIDLE` re-set, `poke.rs`); deferrals and the restore at stop (`restore.rs`) | 5.15 keepalive, pokes, deferrals and restore (5.10: does not load); 6.12 callbacks (6.1: loads, EINVAL at run time; the agent polls those sockets, and their flags stay after a stop) |
//! | `lifeline_probe_byte` | tc egress on the devices the watched peers are routed through: one octet of old data on a fast phase's keepalive probes, answered by a live peer without rate limit | 5.15 with the pokes (the program itself 5.1: `bpf_tcp_sock`); tcx from 6.6, netlink's clsact qdisc before |
//!
//! No kprobes (many hardened kernels, including this project's CI, have none) and no
//! per-packet work outside the watch set: attached to the root, `sock_ops` runs for the
//! handshake of every TCP connection of the host (a port lookup and out), and only the
//! per-socket callback flags this probe sets on target sockets make it run after that.
#![no_std]
// aya's program macros hand each program its context by value; the context is a pointer
// wrapper that the program only reads.
#![allow(
    clippy::needless_pass_by_value,
    reason = "the aya macros' program signature takes the context by value"
)]
#![no_main]

mod adopt;
mod byteprobe;
mod cgroup_tp;
mod keepalive;
mod linear;
mod maps;
mod owner;
mod poke;
mod restore;
mod sockops;
mod sockopt;
mod unanswered;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // The verifier rejects any program that could reach a panic, so this is never called.
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
