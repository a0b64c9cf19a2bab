//! What lifeline needs from the kernel, and the first Linux release that has each piece: one
//! table shared by `lifeline check` (what this kernel lacks), the status texts, the lab's
//! expectations per kernel (`tests/src/infra/kernel.rs`: a feature the kernel has must work, one
//! it lacks must degrade exactly as `without` says) and docs/KERNELS.md, which the kernel
//! matrix (`cargo xtask test --kernel all`) writes from what the tests measured.
//!
//! `since` comes from the kernel source; the matrix measures 5.10, 6.1 and 6.12 (Debian's
//! cloud kernels), so every boundary below 6.12 is confirmed on one side or both. Which of
//! the probe's programs needs which feature is [`crate::hooks::Hook`]'s table.

/// One kernel capability lifeline uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feature {
    /// Stable name, used in the lab's reports and the docs.
    pub id: &'static str,
    /// What lifeline gets from it.
    pub gives: &'static str,
    /// First Linux release with it, (major, minor).
    pub since: (u32, u32),
    /// What lifeline does without it, as the user sees it.
    pub without: &'static str,
    /// Without it `lifeline run` refuses to start (`check` fails).
    pub required: bool,
}

impl Feature {
    /// Whether a kernel of release `version` has it.
    #[must_use]
    pub const fn in_kernel(&self, version: (u32, u32)) -> bool {
        version.0 > self.since.0 || version.0 == self.since.0 && version.1 >= self.since.1
    }
}

/// `sock_ops` on the cgroup v2 root as the probe uses it. What sets the release is the
/// `NEWS` ring buffer every record change is pushed into (`BPF_MAP_TYPE_RINGBUF` and
/// `bpf_ringbuf_output`, 5.8, reachable from `sock_ops` through `bpf_base_func_proto()` in
/// <https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/helpers.c>; aya-log's buffer is
/// one too): the object, whose maps are all created at load, does not load before it. The
/// rest is older: the RTO, RETRANS and STATE callbacks, `bpf_sock_ops_cb_flags_set` and the
/// `snd_una`/`packets_out`/`bytes_acked` context fields 4.16 (`BPF_SOCK_OPS_*_CB_FLAG` in
/// <https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/bpf.h>),
/// `bpf_get_socket_cookie` on a `bpf_sock_ops` 4.19 (`sock_ops_func_proto()` in
/// <https://github.com/torvalds/linux/blob/v6.18/net/core/filter.c>). The RTT callback (5.3)
/// is not armed (`sock::WATCH_CB_FLAGS`).
pub const SOCK_OPS: Feature = Feature {
    id: "sock_ops",
    gives: "sock_ops callbacks (RTO, RETRANS, STATE) on the cgroup v2 root, reported through the news ring buffer: a stall is seen as it happens",
    since: (5, 8),
    without: "lifeline does not start; `check` fails on `kernel`",
    required: true,
};

/// `bpf_get_netns_cookie` and `bpf_get_current_ancestor_cgroup_id` in `cgroup/connect4|6`.
pub const CONNECT_HOOKS: Feature = Feature {
    id: "connect_hooks",
    gives: "connect hooks on the root with the task's cgroup ancestry and network namespace: who owns a socket, and whether it is a target",
    since: (5, 7),
    without: "lifeline does not start; `check` fails on `sock_ops attach`",
    required: true,
};

/// `cgroup:cgroup_mkdir`/`cgroup_rmdir` with u64 ids in the record.
pub const CGROUP_TRACEPOINTS: Feature = Feature {
    id: "cgroup_tracepoints",
    gives: "cgroup_mkdir/rmdir tracepoints: a re-created unit cgroup is a target before its first process runs",
    since: (5, 5),
    without: "targets are re-checked every sweep, so a restarted unit's first connection may be adopted late; `check` warns on `cgroup tracepoints`",
    required: false,
};

/// fentry on `tcp_write_wakeup`, or the `timer_expire_entry` tracepoint (`tp_btf`) where a
/// kernel refuses fentry, with BTF (all 5.5, as `bpf_probe_read_kernel`), sending into the
/// news ring buffer (`bpf_ringbuf_output`, 5.8).
pub const KEEPALIVE_NEWS: Feature = Feature {
    id: "keepalive_news",
    gives: "the kernel reports a watched idle socket's unanswered keepalive probes as they happen: no periodic tcp_info reads of idle sockets",
    since: (5, 8),
    without: "idle sockets are looked at through sock_diag on a schedule (the same verdicts, one tcp_info read each); one warning at start; `check` warns on `unanswered probes`",
    required: false,
};

/// `bpf_setsockopt` of `SO_KEEPALIVE`, `TCP_KEEPIDLE`/`KEEPINTVL`/`KEEPCNT`, `TCP_USER_TIMEOUT`.
pub const KEEPALIVE_SET: Feature = Feature {
    id: "keepalive_set",
    gives: "keepalive set on new watched sockets from sock_ops: a dead peer behind an idle connection is found",
    since: (5, 9),
    without: "idle peers are found only when the application writes; status: `not armed: kernel refused (errno 22)`",
    required: false,
};

/// `bpf_getsockopt` of the same options (`sol_tcp_sockopt()` reusing `do_tcp_getsockopt()`).
pub const KEEPALIVE_READ: Feature = Feature {
    id: "keepalive_read",
    gives: "keepalive values read first and only ever lowered: an application's stricter values stand",
    since: (6, 1),
    without: "lifeline's values are set without reading the socket's: status `1s,1s,20 (set without reading)`; a stricter value the application set before connecting is loosened to lifeline's (one set after connecting still counts, through the setsockopt hook)",
    required: false,
};

/// `TCP_THIN_LINEAR_TIMEOUTS` through `bpf_setsockopt` from `sock_ops`: one of the options
/// the 6.1 rework of `bpf_setsockopt(SOL_TCP)` let through to `do_tcp_setsockopt()` (commit
/// "bpf: Add a few optnames to `bpf_setsockopt`", `sol_tcp_sockopt()` in
/// <https://github.com/torvalds/linux/blob/v6.18/net/core/filter.c>); 5.10's
/// `_bpf_setsockopt()` refuses it with EINVAL. The kernel then keeps a thin stream's
/// retransmission timeout at its RTO for the first 6 retransmissions instead of doubling it
/// (`tcp_retransmit_timer()`, `TCP_THIN_LINEAR_RETRIES`, in
/// <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>).
pub const LINEAR_TIMEOUTS: Feature = Feature {
    id: "linear_timeouts",
    gives: "linear retransmission timeouts on watched thin streams: a black-holed flow's 8 unanswered transmissions in a row are collected in about 2.4 s, and the stall verdict comes from them",
    since: (6, 1),
    without: "retransmissions back off exponentially from 200 ms: the stall verdict comes from --stall-timeout (10 s) with as many unanswered transmissions as fit in it; status `linear_timeouts: refused (errno 22)`; `check` warns on `stall evidence`",
    required: false,
};

/// `cgroup/setsockopt` on the root (5.3), with the watched socket found by its addresses.
pub const APP_KEEPALIVE: Feature = Feature {
    id: "app_keepalive",
    gives: "a setsockopt hook merges the application's own keepalive calls (Go sets them after connect) with lifeline's: its looser values never undo lifeline's",
    since: (5, 3),
    without: "an application that sets keepalive after connecting (every Go client) loosens lifeline's values: idle dead peers are found only after the application's own keepalive time; `check` warns",
    required: false,
};

/// `bpf_get_netns_cookie` in `cgroup/setsockopt` (5.15).
pub const APP_KEEPALIVE_NETNS: Feature = Feature {
    id: "app_keepalive_netns",
    gives: "the setsockopt hook matches watched sockets in the agent's network namespace only",
    since: (5, 15),
    without: "the hook matches by addresses and ports alone: a socket of another namespace with exactly the addresses and ports of a watched one would get the same (stricter) keepalive",
    required: false,
};

/// `iter/tcp` with `bpf_get_socket_cookie` (5.12) and `bpf_setsockopt` (5.15).
pub const ITER_KEEPALIVE: Feature = Feature {
    id: "iter_keepalive",
    gives: "the TCP iterator arms keepalive on sockets older than the agent",
    since: (5, 15),
    without: "sockets older than the agent get no keepalive: status `not armed: pre-existing socket`; `check` warns on `bpf_setsockopt`",
    required: false,
};

/// `TCP_BPF_SOCK_OPS_CB_FLAGS` through `bpf_setsockopt` in `iter/tcp`.
pub const ITER_CALLBACKS: Feature = Feature {
    id: "iter_callbacks",
    gives: "the TCP iterator arms the sock_ops callbacks on sockets older than the agent",
    since: (6, 12),
    without: "sockets older than the agent are polled through sock_diag every sweep (same verdicts, one tcp_info read each); status SOURCE `polled` and why; `check` warns on `bpf_setsockopt`",
    required: false,
};

/// Fast keepalive probes (`crate::poke`): `bpf_setsockopt(TCP_KEEPIDLE)` from `iter/tcp`
/// (5.15, as `ITER_KEEPALIVE`) pokes the keepalive timer; a tc egress program
/// (`BPF_PROG_TYPE_SCHED_CLS`, with `bpf_skb_change_tail` 4.9, `bpf_tcp_sock` 5.1 and
/// `bpf_get_socket_cookie` 4.12) gives each such probe an octet of old data, attached through
/// tcx from 6.6 and netlink's clsact qdisc before.
pub const FAST_PROBES: Feature = Feature {
    id: "fast_probes",
    gives: "once an idle socket's keepalive probe goes unanswered, the next ones come every --fast-probes (100 ms) with one octet of old data each, which a live peer answers at once: the silent verdict's 12 unanswered probes take about 2 s instead of 12",
    since: (5, 15),
    without: "keepalive probes stay at the kernel's 1 s cadence: the silent verdict takes IDLE + 12 x INTERVAL (13 s); status `probe_bytes` stays 0; `check` warns on `silence evidence`",
    required: false,
};

/// Putting back what lifeline changed (`crate::restore`): `bpf_setsockopt` from `iter/tcp`
/// (5.15, as `ITER_KEEPALIVE`), to the values read at arming (6.1, `KEEPALIVE_READ`) or set by
/// the application since; the callback flags through `TCP_BPF_SOCK_OPS_CB_FLAGS` (6.12,
/// `ITER_CALLBACKS`).
pub const RESTORE: Feature = Feature {
    id: "restore",
    gives: "at a clean stop, and at the next start after a crash, the TCP iterator puts every socket option lifeline changed back to the application's value: SO_KEEPALIVE, its timing, TCP_USER_TIMEOUT, linear timeouts (callback flags from 6.12)",
    since: (5, 15),
    without: "the options lifeline set stay on the sockets it armed after it stops (SO_KEEPALIVE on, keepalive 1s,1s,20, callback flags): the stop log counts them as not restored, status says `restore on stop: not possible`, `check` warns on `restore on stop`",
    required: false,
};

/// Deferring the kernel's own keepalive abort while lifeline only observes
/// (`lifeline_judge::defer`): `bpf_setsockopt` from `iter/tcp` (5.15) re-times a silent
/// socket's keepalive.
pub const DEFER: Feature = Feature {
    id: "defer",
    gives: "in --dry-run and while the guard holds, a silent socket's keepalive is re-timed so that the kernel aborts it no sooner than the application's own settings would",
    since: (5, 15),
    without: "--dry-run arms no keepalive and no TCP_USER_TIMEOUT (idle dead peers are not judged in dry run); while the guard holds, the kernel's own keepalive abort still comes COUNT x INTERVAL after the last answer; the start log, status and `check` say so",
    required: false,
};

/// tcx (`BPF_TCX_EGRESS` links, 6.6): the fast probes' tc program attached first in the
/// device's egress chain (`kernel/probe/fast/attach.rs`); before it, a clsact filter.
pub const TCX: Feature = Feature {
    id: "tcx",
    gives: "the fast probes' tc program is a tcx link first in the device's egress chain: a program attached later at the tail (Cilium's, Calico's) cannot hide it, and a killed agent's link goes with it",
    since: (6, 6),
    without: "a clsact filter at a priority and handle of lifeline's own (below every other filter's, or the newest at Cilium's priority 1): a filter that ends the chain attached in front of it later hides it (status: `fast probes hidden by another program on DEVICE`; a restart puts it ahead again), and a killed agent's filter stays until the next start removes it",
    required: false,
};

/// `SOCK_DESTROY` over `sock_diag` (4.5, `CONFIG_INET_DIAG_DESTROY=y`).
pub const SOCK_DESTROY: Feature = Feature {
    id: "sock_destroy",
    gives: "SOCK_DESTROY: the owner gets ECONNABORTED and re-dials",
    since: (4, 5),
    without: "kills are impossible; `check` fails on `SOCK_DESTROY`; only `--restart-unit` can help",
    required: true,
};

/// Every feature, oldest first.
pub const ALL: [Feature; 16] = [
    SOCK_DESTROY,
    APP_KEEPALIVE,
    CGROUP_TRACEPOINTS,
    CONNECT_HOOKS,
    SOCK_OPS,
    KEEPALIVE_NEWS,
    KEEPALIVE_SET,
    ITER_KEEPALIVE,
    FAST_PROBES,
    RESTORE,
    DEFER,
    APP_KEEPALIVE_NETNS,
    KEEPALIVE_READ,
    LINEAR_TIMEOUTS,
    TCX,
    ITER_CALLBACKS,
];

/// `(major, minor)` of a release string such as `5.10.0-46-cloud-amd64`.
#[must_use]
pub fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_and_boundaries() {
        assert_eq!(parse_release("5.10.0-46-cloud-amd64"), Some((5, 10)));
        assert_eq!(parse_release("6.12.117+deb12-cloud-amd64\n"), Some((6, 12)));
        assert_eq!(parse_release("garbage"), None);
        assert!(!KEEPALIVE_READ.in_kernel((5, 10)));
        assert!(KEEPALIVE_READ.in_kernel((6, 1)) && KEEPALIVE_READ.in_kernel((7, 0)));
        assert!(!ITER_CALLBACKS.in_kernel((6, 1)));
        assert!(ALL.windows(2).all(|w| w[0].since <= w[1].since));
    }
}
