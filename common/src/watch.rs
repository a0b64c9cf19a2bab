//! The watch model: which sockets the probe records. The programs are attached once, to the
//! cgroup v2 root, which outlives every unit; a socket is selected in the kernel when it
//! connects to a watched port from the agent's network namespace and
//! - its task is in a target cgroup or below it (`TARGET_CGROUPS`, kept current by the
//!   `cgroup_mkdir`/`cgroup_rmdir` tracepoints from `TARGET_PATHS`, so a unit's re-created
//!   cgroup is a target before its first process can run), or
//! - its task's `comm` is a target (`COMMS`), or
//! - its peer is one of the endpoint's addresses (`ENDPOINT_PEERS`, kept by the agent).

/// `Owner::reasons` and `SockState::reasons` bits: why a socket is watched.
pub const BY_CGROUP: u32 = 1;
pub const BY_COMM: u32 = 2;
pub const BY_ENDPOINT: u32 = 4;

/// `WatchConfig::flags`: which kinds of target are configured, so the hooks skip the
/// lookups for kinds that have none.
pub const WATCH_CGROUPS: u32 = 1;
pub const WATCH_COMMS: u32 = 2;
pub const WATCH_ENDPOINT: u32 = 4;
/// `WatchConfig::flags`, not a kind of target: arm linear retransmission timeouts on every
/// recorded socket (`--stall-unanswered` above 0).
pub const ARM_LINEAR_TIMEOUTS: u32 = 8;
/// `WatchConfig::flags`: the TCP iterator's pass puts back what lifeline changed on every
/// socket with an `ORIGINALS` entry, and arms and pokes nothing (`crate::restore`). Set
/// only once every other program is detached: at a clean stop, and at a start that found a
/// crashed agent's originals.
pub const RESTORE: u32 = 16;

/// Deepest cgroup level the connect hooks look at for a target ancestor (systemd's units
/// sit at level 2-4; the kernel allows more, but a target is never that deep).
pub const MAX_CGROUP_DEPTH: i32 = 16;

/// Bytes of a target cgroup's path as the `cgroup_mkdir` tracepoint prints it
/// ("/system.slice/kubelet.service", relative to the hierarchy root), NUL-padded: the key
/// of `TARGET_PATHS`. Longer targets are refused by the agent.
pub const CGROUP_PATH_LEN: usize = 256;

/// The `cgroup:cgroup_mkdir`/`cgroup_rmdir` record (include/trace/events/cgroup.h, class
/// `cgroup`): the offsets after the 8-byte common header, the same from 5.5 (u64 ids) to
/// 6.18. The agent compares them with tracefs' `format` file before it attaches.
pub mod tracepoint {
    pub const ROOT_OFFSET: usize = 8;
    pub const ID_OFFSET: usize = 16;
    pub const PATH_LOC_OFFSET: usize = 24;
    /// `root` is the hierarchy id; cgroup v2's default hierarchy is 0 (the `0::` line of
    /// /proc/PID/cgroup). Hybrid hosts also create every unit in v1 hierarchies.
    pub const DEFAULT_HIERARCHY: i32 = 0;
}

/// The one `CONFIG` entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchConfig {
    /// The agent's network namespace (`bpf_get_netns_cookie`); 0 until calibrated. The
    /// hooks run for every namespace of the host; sockets elsewhere are never recorded
    /// (the agent could neither read nor kill them: `sock_diag` is per namespace).
    pub netns_cookie: u64,
    /// Socket cookie of the agent's calibration socket: its connect is refused by the hook
    /// (no packet leaves) after writing `netns_cookie`. Works on every kernel with
    /// `bpf_get_netns_cookie` in connect hooks (5.7), unlike `SO_NETNS_COOKIE` (5.14).
    pub calibrate_cookie: u64,
    /// `WATCH_*` bits.
    pub flags: u32,
    /// Bit `n` set: a target cgroup sits at level `n` of the hierarchy (the root is level 0),
    /// so the connect hooks ask for the task's ancestor at those levels only, not at all 16.
    pub cgroup_levels: u32,
}

/// The level of a cgroup from its path below the hierarchy root ("/system.slice/kubelet.service"
/// is level 2), as `cgroup->level` counts it; `None` past `MAX_CGROUP_DEPTH`.
#[must_use]
pub fn cgroup_level(path: &str) -> Option<u32> {
    let n = path.split('/').filter(|c| !c.is_empty()).count();
    u32::try_from(n)
        .ok()
        .filter(|l| *l < MAX_CGROUP_DEPTH.unsigned_abs())
}

const _: () = assert!(core::mem::size_of::<WatchConfig>() == 24);

/// Key of `ENDPOINT_PEERS`: one address of the endpoint, with its port.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PeerKey {
    /// IPv4 in the first four bytes (network order), as in `SockState`.
    pub addr: [u8; 16],
    /// Host byte order.
    pub port: u16,
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    pub pad: u32,
}

const _: () = assert!(core::mem::size_of::<PeerKey>() == 24);

#[cfg(feature = "user")]
mod user {
    use core::net::{IpAddr, SocketAddr};

    use super::{PeerKey, WatchConfig};

    // SAFETY: `repr(C)`, padding is an explicit field (sizes checked above), every bit
    // pattern is valid.
    unsafe impl aya::Pod for WatchConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for PeerKey {}

    impl From<SocketAddr> for PeerKey {
        fn from(peer: SocketAddr) -> Self {
            let mut addr = [0u8; 16];
            let family = match peer.ip() {
                IpAddr::V4(v4) => {
                    addr[..4].copy_from_slice(&v4.octets());
                    2
                }
                IpAddr::V6(v6) => {
                    addr = v6.octets();
                    10
                }
            };
            Self {
                addr,
                port: peer.port(),
                family,
                pad: 0,
            }
        }
    }
}
