//! The probe's programs, one declarative table: each [`Hook`]'s program name in the eBPF
//! object (the function name its `agent-ebpf` attribute gives it), how it attaches, and the
//! [`Feature`] that sets the first kernel it works on. The loader, the error texts and
//! `lifeline check` name hooks through it, so a program renamed on one side is a failing
//! test (`agent/src/kernel/probe/attach.rs` reads the built object), not a load error.

use core::fmt;

use crate::features::{
    APP_KEEPALIVE, APP_KEEPALIVE_NETNS, CGROUP_TRACEPOINTS, CONNECT_HOOKS, FAST_PROBES, Feature,
    ITER_KEEPALIVE, KEEPALIVE_NEWS, SOCK_OPS,
};

/// One program of the eBPF object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    SockOps,
    Connect4,
    Connect6,
    CgroupMkdir,
    CgroupRmdir,
    /// `cgroup/setsockopt` with the network namespace check.
    Setsockopt,
    /// The same hook without it, for kernels whose `cgroup/setsockopt` has no netns cookie.
    SetsockoptAnyNetns,
    /// Unanswered keepalive probes, from fentry.
    Unanswered,
    /// The same news from the `timer_expire_entry` tracepoint, where fentry is refused.
    UnansweredTimer,
    /// The TCP iterator that arms sockets older than the agent (and pokes fast probes).
    AdoptIter,
    /// tc egress: one octet of old data on a fast phase's keepalive probes.
    ProbeByte,
}

/// How a program attaches, with the kernel object it attaches to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    SockOps,
    /// `cgroup/<hook>` of a socket address (`connect4`, `connect6`).
    CgroupSockAddr(&'static str),
    /// `cgroup/<hook>` of a socket option call (`setsockopt`).
    CgroupSockopt(&'static str),
    TracePoint {
        category: &'static str,
        event: &'static str,
    },
    /// fentry on a kernel function.
    FEntry(&'static str),
    /// A BTF-typed tracepoint (`tp_btf`).
    BtfTracePoint(&'static str),
    /// `iter/<target>`.
    Iter(&'static str),
    /// tc egress (`classifier`) on the devices the watched peers are routed through.
    TcEgress,
}

struct Spec {
    hook: Hook,
    program: &'static str,
    attach: Attach,
    feature: &'static Feature,
}

/// A row per hook (a test checks it), in [`Hook::ALL`]'s order.
#[rustfmt::skip]
const TABLE: [Spec; 11] = [
    Spec { hook: Hook::SockOps, program: "lifeline_sockops", attach: Attach::SockOps, feature: &SOCK_OPS },
    Spec { hook: Hook::Connect4, program: "lifeline_connect4", attach: Attach::CgroupSockAddr("connect4"), feature: &CONNECT_HOOKS },
    Spec { hook: Hook::Connect6, program: "lifeline_connect6", attach: Attach::CgroupSockAddr("connect6"), feature: &CONNECT_HOOKS },
    Spec { hook: Hook::CgroupMkdir, program: "lifeline_cgroup_mkdir", attach: Attach::TracePoint { category: "cgroup", event: "cgroup_mkdir" }, feature: &CGROUP_TRACEPOINTS },
    Spec { hook: Hook::CgroupRmdir, program: "lifeline_cgroup_rmdir", attach: Attach::TracePoint { category: "cgroup", event: "cgroup_rmdir" }, feature: &CGROUP_TRACEPOINTS },
    Spec { hook: Hook::Setsockopt, program: "lifeline_setsockopt", attach: Attach::CgroupSockopt("setsockopt"), feature: &APP_KEEPALIVE_NETNS },
    Spec { hook: Hook::SetsockoptAnyNetns, program: "lifeline_setsockopt_any_netns", attach: Attach::CgroupSockopt("setsockopt"), feature: &APP_KEEPALIVE },
    Spec { hook: Hook::Unanswered, program: "lifeline_unanswered", attach: Attach::FEntry("tcp_write_wakeup"), feature: &KEEPALIVE_NEWS },
    Spec { hook: Hook::UnansweredTimer, program: "lifeline_unanswered_timer", attach: Attach::BtfTracePoint("timer_expire_entry"), feature: &KEEPALIVE_NEWS },
    Spec { hook: Hook::AdoptIter, program: "lifeline_adopt", attach: Attach::Iter("tcp"), feature: &ITER_KEEPALIVE },
    Spec { hook: Hook::ProbeByte, program: "lifeline_probe_byte", attach: Attach::TcEgress, feature: &FAST_PROBES },
];

// A row out of the enum's order, or a hook without a row, fails the build.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            TABLE[i].hook as usize == i,
            "hooks::TABLE is not in Hook's order"
        );
        i += 1;
    }
    assert!(TABLE.len() == Hook::ALL.len(), "hooks::TABLE lacks a row");
};

impl Hook {
    /// Every program of the object.
    pub const ALL: [Self; 11] = [
        Self::SockOps,
        Self::Connect4,
        Self::Connect6,
        Self::CgroupMkdir,
        Self::CgroupRmdir,
        Self::Setsockopt,
        Self::SetsockoptAnyNetns,
        Self::Unanswered,
        Self::UnansweredTimer,
        Self::AdoptIter,
        Self::ProbeByte,
    ];

    const fn spec(self) -> &'static Spec {
        // The table is in the enum's order (checked at compile time beside it).
        &TABLE[self as usize]
    }

    /// The program's name in the eBPF object.
    #[must_use]
    pub const fn program(self) -> &'static str {
        self.spec().program
    }

    #[must_use]
    pub const fn attach(self) -> Attach {
        self.spec().attach
    }

    /// What the program gives, and so the first kernel it works on.
    #[must_use]
    pub const fn feature(self) -> &'static Feature {
        self.spec().feature
    }

    /// First Linux release it works on, (major, minor).
    #[must_use]
    pub const fn since(self) -> (u32, u32) {
        self.feature().since
    }
}

impl Attach {
    /// The ELF section `aya-ebpf` puts such a program in (what aya reads its type from).
    #[must_use]
    pub const fn section(self) -> Section {
        Section(self)
    }
}

/// An [`Attach`]'s ELF section name, written without allocating (this crate is `no_std`).
pub struct Section(Attach);

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Attach::SockOps => f.write_str("sockops"),
            Attach::CgroupSockAddr(h) | Attach::CgroupSockopt(h) => write!(f, "cgroup/{h}"),
            Attach::TracePoint { category, event } => write!(f, "tracepoint/{category}/{event}"),
            Attach::FEntry(function) => write!(f, "fentry/{function}"),
            Attach::BtfTracePoint(event) => write!(f, "tp_btf/{event}"),
            Attach::Iter(target) => write!(f, "iter/{target}"),
            Attach::TcEgress => f.write_str("classifier"),
        }
    }
}

impl fmt::Display for Attach {
    /// As an operator reads it ("fentry on `tcp_write_wakeup`").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::SockOps => f.write_str("sock_ops on the cgroup v2 root"),
            Self::CgroupSockAddr(h) | Self::CgroupSockopt(h) => {
                write!(f, "cgroup/{h} on the cgroup v2 root")
            }
            Self::TracePoint { category, event } => write!(f, "the {category}:{event} tracepoint"),
            Self::FEntry(function) => write!(f, "fentry on {function}"),
            Self::BtfTracePoint(event) => write!(f, "the {event} tracepoint"),
            Self::Iter(target) => write!(f, "the {target} iterator"),
            Self::TcEgress => {
                f.write_str("tc egress on the devices the watched peers are routed through")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hook_has_its_own_row_and_program_name() {
        for (i, h) in Hook::ALL.iter().enumerate() {
            assert_eq!(TABLE.iter().filter(|s| s.hook == *h).count(), 1, "{h:?}");
            assert!(Hook::ALL[..i].iter().all(|o| o.program() != h.program()));
        }
    }

    #[test]
    fn minimum_kernels_come_from_the_features() {
        assert_eq!(Hook::SockOps.since(), (5, 8));
        assert_eq!(Hook::Setsockopt.since(), (5, 15));
        assert_eq!(Hook::SetsockoptAnyNetns.since(), (5, 3));
        assert_eq!(Hook::UnansweredTimer.since(), Hook::Unanswered.since());
    }
}
