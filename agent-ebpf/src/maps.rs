//! Maps shared with the agent; names must match `lifeline_common::maps`.

use aya_ebpf::{
    macros::map,
    maps::{Array, HashMap, LruHashMap, PerCpuArray, RingBuf},
};
use lifeline_common::{
    COMM_LEN, Keepalive, Owner, SockState,
    config::stats,
    news::News,
    poke::{POKE_ENTRIES, Poke},
    restore::{Defer, Original},
    sockopt::{AppSet, SockKey},
    tc::SEEN_SLOTS,
    watch::{CGROUP_PATH_LEN, PeerKey, WatchConfig},
};

/// Watched sockets by cookie. The agent may resize it at load time (`--max-sockets`).
#[map]
pub(crate) static SOCKETS: HashMap<u64, SockState> = HashMap::with_max_entries(65_536, 0);

/// Watched sockets by address, for the `setsockopt` hook (which has no socket cookie);
/// written and removed with their `SOCKETS` record, resized with it.
#[map]
pub(crate) static TUPLES: HashMap<SockKey, AppSet> = HashMap::with_max_entries(65_536, 0);

/// What the application had on each armed socket, and what lifeline changed
/// (`lifeline_common::restore`), by cookie: written when arming and by the `setsockopt` hook,
/// removed with the record, read by the restore pass. Resized with `SOCKETS`; the agent pins
/// it under bpffs so the next start after a crash finds it.
#[map]
pub(crate) static ORIGINALS: HashMap<u64, Original> = HashMap::with_max_entries(65_536, 0);

/// Deferrals the agent asks the TCP iterator to apply (`lifeline_common::restore::Defer`),
/// by cookie; the iterator applies each and removes it.
#[map]
pub(crate) static DEFER: HashMap<u64, Defer> = HashMap::with_max_entries(4096, 0);

/// Where `sock_ops` builds a new record: a 168-byte `SockState` on the 512-byte BPF stack,
/// plus the copies LLVM makes of it, would leave no room for the keepalive helpers' frames
/// ("combined stack size ... Too large").
#[map]
pub(crate) static SCRATCH: PerCpuArray<SockState> = PerCpuArray::with_max_entries(1, 0);

/// Owner of each socket connecting to a watched port from the agent's namespace, by cookie,
/// with the reasons it is a target so far. LRU so that sockets that never reach
/// ESTABLISHED cannot fill it. One LRU list per CPU (`BPF_F_NO_COMMON_LRU`, 4.10): with the
/// common list every insert from `connect4` takes the list's global lock and shares its
/// cache lines with every other CPU's connects
/// (<https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/bpf_lru_list.c>,
/// `bpf_common_lru_pop_free`); per CPU, an insert touches only its own CPU's list. The
/// entries are split among the CPUs, so the agent sizes it at load time (1,024 per possible
/// CPU, at least 16,384): a CPU evicts only past that many connects not yet ESTABLISHED.
#[map]
pub(crate) static OWNERS: LruHashMap<u64, Owner> =
    LruHashMap::with_max_entries(16_384, BPF_F_NO_COMMON_LRU);

/// Owners of connects with no target reason whose destination is one of the endpoint's
/// addresses (`ENDPOINT_PEERS`): only their peer can make them targets, at ESTABLISHED.
/// Apart from `OWNERS` so that a flood of such connects by anyone (a neighbour's refused
/// connects to the API address) evicts only its own kind, never a target's pending entry.
/// Same shape and size as `OWNERS`.
#[map]
pub(crate) static PEER_OWNERS: LruHashMap<u64, Owner> =
    LruHashMap::with_max_entries(16_384, BPF_F_NO_COMMON_LRU);

/// `BPF_F_NO_COMMON_LRU` (<https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/bpf.h>).
const BPF_F_NO_COMMON_LRU: u32 = 1 << 1;

/// The share of `SOCKETS` that sockets watched only for their peer (`BY_ENDPOINT` alone:
/// any process's connection to the API address) may hold: one entry per such record,
/// inserted `BPF_NOEXIST` before the record and removed with it. Full: the socket is not
/// recorded (`stats::ENDPOINT_QUOTA_FULL`), and the rest of `SOCKETS` stays for targets.
/// A plain hash map whose size is the quota (5.10 has no per-map counters); the agent sizes
/// it at load time from `--max-sockets`.
#[map]
pub(crate) static ENDPOINT_QUOTA: HashMap<u64, u8> = HashMap::with_max_entries(16_384, 0);

/// Watched remote ports (host byte order).
#[map]
pub(crate) static PORTS: HashMap<u16, u8> = HashMap::with_max_entries(64, 0);

/// Target process names (`--comm`).
#[map]
pub(crate) static COMMS: HashMap<[u8; COMM_LEN], u8> = HashMap::with_max_entries(16, 0);

/// Ids of the target cgroups that exist now → the target's index. Written by the agent at
/// start and by the `cgroup_mkdir`/`cgroup_rmdir` tracepoints as units come and go.
#[map]
pub(crate) static TARGET_CGROUPS: HashMap<u64, u32> = HashMap::with_max_entries(256, 0);

/// Paths of the target cgroups (NUL-padded, as the tracepoint prints them) → index.
#[map]
pub(crate) static TARGET_PATHS: HashMap<[u8; CGROUP_PATH_LEN], u32> =
    HashMap::with_max_entries(32, 0);

/// Where the tracepoints copy a path to look it up (too big for the BPF stack).
#[map]
pub(crate) static PATH_SCRATCH: PerCpuArray<[u8; CGROUP_PATH_LEN]> =
    PerCpuArray::with_max_entries(1, 0);

/// The endpoint's addresses (current, or leaving within the grace): every socket to one of
/// them is a target, whoever owns it. Kept by the agent as DNS answers change.
#[map]
pub(crate) static ENDPOINT_PEERS: HashMap<PeerKey, u8> = HashMap::with_max_entries(256, 0);

/// The endpoint's addresses, each with the `bpf_ktime_get_ns` moment the agent last found
/// the path to it working (a fresh connection accepted, a socket hearing from it); 0: not
/// since the agent started. `crate::linear` keeps a socket's linear timeouts for a trouble
/// episode only once the path to its peer was found working after the episode began.
#[map]
pub(crate) static PATH_ALIVE: HashMap<PeerKey, u64> = HashMap::with_max_entries(256, 0);

#[map]
pub(crate) static CONFIG: Array<WatchConfig> = Array::with_max_entries(1, 0);

/// The keepalive values to arm watched sockets with (one entry; idle 0: do not arm).
#[map]
pub(crate) static KEEPALIVE: Array<Keepalive> = Array::with_max_entries(1, 0);

/// Sockets in a fast keepalive phase (`lifeline_common::poke`): opened by the unanswered-probe
/// program, read by the tc egress program, advanced and closed by the TCP iterator.
#[map]
pub(crate) static POKE: LruHashMap<u64, Poke> = LruHashMap::with_max_entries(POKE_ENTRIES, 0);

/// Packets the tc egress program saw leaving each device it is attached to, by
/// `lifeline_common::tc::slot(ifindex)`: the agent compares them with the device's transmit
/// counter to tell whether another program ahead of it in the chain hides it. Per CPU: one
/// add to this CPU's slot per packet, no shared cache line.
#[map]
pub(crate) static TC_SEEN: PerCpuArray<u64> = PerCpuArray::with_max_entries(SEEN_SLOTS, 0);

/// Pre-existing sockets the agent asks the TCP iterator to arm.
#[map]
pub(crate) static ADOPT: HashMap<u64, i32> = HashMap::with_max_entries(65_536, 0);

/// News of watched sockets (`lifeline_common::news`): recorded, a trouble episode began, a
/// state change, closed, keepalive probes unanswered (from the threshold on, once a probe),
/// the application's own keepalive merged (`crate::sockopt`). A few events per socket
/// lifetime, never per packet, so the agent does
/// work only for sockets with news. 1 MiB holds about 43,000 events: a burst of new
/// connections; a full buffer is counted (`stats::NEWS_LOST`) and the agent then re-reads
/// the whole map once.
#[map]
pub(crate) static NEWS: RingBuf = RingBuf::with_byte_size(256 * 4096, 0);

/// Counters, indexed by `lifeline_common::config::stats`.
#[map]
pub(crate) static STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(stats::LEN, 0);

pub(crate) fn count(index: u32) {
    if let Some(slot) = STATS.get_ptr_mut(index) {
        // SAFETY: per-CPU slot, no concurrent writer on this CPU while the program runs.
        unsafe { *slot += 1 };
    }
}

/// Tell the agent about `cookie` (`lifeline_common::news`), with the kind's `arg` (0 for
/// most); counted when the buffer is full.
pub(crate) fn news(cookie: u64, kind: u32, arg: u32) {
    let n = News { cookie, kind, arg };
    if NEWS.output::<News>(&n, 0).is_err() {
        count(stats::NEWS_LOST);
    }
}

pub(crate) fn config() -> Option<*mut WatchConfig> {
    CONFIG.get_ptr_mut(0)
}

pub(crate) fn config_flag(flag: u32) -> bool {
    // SAFETY: the array's one slot, plain data.
    config().is_some_and(|c| unsafe { (*c).flags } & flag != 0)
}
