//! Configuration the agent writes into the probe's maps, and per-socket owner records.

/// Length of a task's `comm` in the kernel (`TASK_COMM_LEN`).
pub const COMM_LEN: usize = 16;

/// Index of each counter in the `STATS` array.
pub mod stats {
    /// A watched socket could not be recorded because `SOCKETS` was full.
    pub const SOCKETS_FULL: u32 = 0;
    /// A callback arrived for a socket whose record is missing (evicted or never stored).
    pub const MISSING_RECORD: u32 = 1;
    /// Sockets that started being watched.
    pub const WATCHED: u32 = 2;
    /// A news event did not fit in the `NEWS` ring buffer: the agent re-reads the whole
    /// `SOCKETS` map once when this grows, instead of trusting its copy.
    pub const NEWS_LOST: u32 = 3;
    /// `UNANSWERED` news sent: the first keepalive probe of a watched socket went unanswered,
    /// or one more past the threshold (`crate::news::UNANSWERED`).
    pub const UNANSWERED: u32 = 4;
    /// A connect to a watched port recorded no owner: its task is no target and its
    /// destination is none of the endpoint's addresses, so it can never become one
    /// (`connect4`/`connect6`). Normal for the node's other traffic to those ports; a
    /// flood of them shows here and costs no map entry.
    pub const OWNERS_SKIPPED: u32 = 5;
    /// A socket whose only reason is its peer (an endpoint client, whoever owns it) was not
    /// recorded because such sockets already hold their share of `SOCKETS`
    /// (`ENDPOINT_QUOTA`), kept so that they can never crowd out a target's record.
    pub const ENDPOINT_QUOTA_FULL: u32 = 6;
    /// Fast keepalive probes sent: pokes of a socket in a fast phase (`crate::poke`).
    pub const FAST_POKES: u32 = 7;
    /// Fast phases stopped because a probe left without its octet (no tc program on the
    /// device it took): the socket goes on at the kernel's own cadence.
    pub const FAST_NO_OCTET: u32 = 8;
    /// Fast phases stopped because a poke sent no probe: the application sent data since
    /// (the keepalive timer sends none while data is in flight), so the socket's
    /// retransmissions are its evidence from then on.
    pub const FAST_BUSY: u32 = 9;
    pub const LEN: u32 = 10;
}

/// Who opened a socket: recorded by the cgroup `connect4`/`connect6` hook, which runs
/// in the context of the connecting task (`sock_ops` callbacks mostly run in softirq
/// context, where "current" is whoever happened to be on the CPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Why the socket is watched so far (`crate::watch::BY_CGROUP` | `BY_COMM`); 0 when only
    /// its peer can still make it a target (`BY_ENDPOINT`, decided at ESTABLISHED).
    pub reasons: u32,
    pub comm: [u8; COMM_LEN],
}

const _: () = assert!(core::mem::size_of::<Owner>() == 24);

#[cfg(feature = "user")]
// SAFETY: `Owner` is `repr(C)`, has no padding (checked above) and every bit pattern is valid.
unsafe impl aya::Pod for Owner {}
