//! Types shared by the kernel probe (`agent-ebpf`) and the agent (`lifeline`).
//!
//! Every type here crosses the kernel/user boundary through a BPF map, so each is
//! `#[repr(C)]` with its padding spelled out and its size checked at compile time:
//! the eBPF object and the agent are built by different compilers for different
//! targets and must agree byte for byte.
#![no_std]

pub mod config;
pub mod features;
pub mod hooks;
pub mod keepalive;
pub mod news;
pub mod poke;
pub mod restore;
pub mod sock;
pub mod sockopt;
pub mod tc;
pub mod watch;

pub use config::{COMM_LEN, Owner};
pub use keepalive::Keepalive;
pub use sock::SockState;

/// Names of the maps in the eBPF object, looked up by the agent.
pub mod maps {
    pub const SOCKETS: &str = "SOCKETS";
    pub const OWNERS: &str = "OWNERS";
    pub const PEER_OWNERS: &str = "PEER_OWNERS";
    pub const ENDPOINT_QUOTA: &str = "ENDPOINT_QUOTA";
    pub const PORTS: &str = "PORTS";
    pub const COMMS: &str = "COMMS";
    pub const CONFIG: &str = "CONFIG";
    pub const ADOPT: &str = "ADOPT";
    pub const KEEPALIVE: &str = "KEEPALIVE";
    pub const NEWS: &str = "NEWS";
    pub const STATS: &str = "STATS";
    pub const TARGET_CGROUPS: &str = "TARGET_CGROUPS";
    pub const TARGET_PATHS: &str = "TARGET_PATHS";
    pub const ENDPOINT_PEERS: &str = "ENDPOINT_PEERS";
    pub const TUPLES: &str = "TUPLES";
    pub const KEEPALIVE_FN: &str = "KEEPALIVE_FN";
    pub const POKE: &str = "POKE";
    pub const ORIGINALS: &str = "ORIGINALS";
    pub const DEFER: &str = "DEFER";
    pub const PATH_ALIVE: &str = "PATH_ALIVE";
    pub const TC_SEEN: &str = "TC_SEEN";
}

/// Names of the probe's load-time globals (`EbpfLoader::override_global`): the keepalive
/// news programs' kernel struct offsets, read from the running kernel's BTF (Rust eBPF has
/// no CO-RE field relocations), their threshold, and a kernel function's address.
pub mod globals {
    /// Byte offset of `icsk_probes_out` (u8) in `struct inet_connection_sock`; 0: unknown,
    /// the program does nothing.
    pub const PROBES_OUT_OFFSET: &str = "PROBES_OUT_OFFSET";
    /// Byte offset of `skc_cookie` (u64) in `struct sock_common`, the start of `struct sock`.
    pub const COOKIE_OFFSET: &str = "COOKIE_OFFSET";
    /// Unanswered probes from which a watched socket's next probe is news.
    pub const UNANSWERED_MIN: &str = "UNANSWERED_MIN";
    /// Byte offset of `function` in `struct timer_list` (the tracepoint fallback).
    pub const TIMER_FUNCTION_OFFSET: &str = "TIMER_FUNCTION_OFFSET";
    /// Byte offset of `sk_timer` in `struct sock`.
    pub const SK_TIMER_OFFSET: &str = "SK_TIMER_OFFSET";
    /// Address of `tcp_keepalive_timer` (u64, from /proc/kallsyms); 0: unknown (then
    /// `maps::KEEPALIVE_FN` may have it).
    pub const KEEPALIVE_TIMER: &str = "KEEPALIVE_TIMER";
    /// `--fast-probes` in ns (u64); 0: off, no fast phase opens.
    pub const FAST_INTERVAL_NS: &str = "FAST_INTERVAL_NS";
    /// Unanswered probes from which a fast phase stops poking (`--silent-probes` + 2): the
    /// verdict's evidence is in, its confirming look needs no more.
    pub const POKE_LIMIT: &str = "POKE_LIMIT";
}

/// Slots of `maps::KEEPALIVE_FN` (u64 each): `tcp_keepalive_timer`'s address learned by the
/// TCP iterator from a TCP socket of the agent's own, for the tracepoint fallback when
/// /proc/kallsyms hides addresses (no `CAP_SYSLOG`: a pod).
pub mod keepalive_fn {
    /// The cookie of the agent's socket (written by the agent).
    pub const COOKIE: u32 = 0;
    /// Its `sk_timer.function` (written by the iterator, read by the timer program).
    pub const ADDRESS: u32 = 1;
    pub const LEN: u32 = 2;
}
