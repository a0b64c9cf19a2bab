//! A watched socket's record as the rules read it: the probe's `#[repr(C)]` `SockState`
//! decoded once, by the agent's kernel stage (`agent/src/kernel/record.rs`), into typed
//! values: moments on the one clock (`Mono`), addresses, and an enum for each of its sentinel
//! codes. The rules never see a sentinel or a raw stamp.

use std::{fmt, net::SocketAddr};

use lifeline_common::{COMM_LEN, Keepalive};

use super::Mono;

/// A negative errno the kernel gave, as its positive number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A TCP state as the kernel numbers them (`include/net/tcp_states.h`,
/// <https://github.com/torvalds/linux/blob/v6.18/include/net/tcp_states.h>).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TcpState {
    Established,
    SynSent,
    SynRecv,
    FinWait1,
    FinWait2,
    TimeWait,
    Close,
    CloseWait,
    LastAck,
    Listen,
    Closing,
    /// No state of the kernel's (0, or a newer kernel's).
    Unknown(u8),
}

impl TcpState {
    #[must_use]
    pub const fn from_code(code: u8) -> Self {
        match code {
            1 => Self::Established,
            2 => Self::SynSent,
            3 => Self::SynRecv,
            4 => Self::FinWait1,
            5 => Self::FinWait2,
            6 => Self::TimeWait,
            7 => Self::Close,
            8 => Self::CloseWait,
            9 => Self::LastAck,
            10 => Self::Listen,
            11 => Self::Closing,
            other => Self::Unknown(other),
        }
    }
}

impl Default for TcpState {
    fn default() -> Self {
        Self::Unknown(0)
    }
}

/// How the socket came to be watched (`SockState::source`, `adopt`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Seen by `sock_ops` at ESTABLISHED: its callbacks are armed.
    #[default]
    SockOps,
    /// Older than the agent: found with a `sock_diag` dump, armed by the TCP iterator where
    /// the kernel allows.
    Adopted(Adoption),
}

impl Origin {
    /// An adopted socket whose callbacks could not be armed: only `sock_diag` tells about it.
    #[must_use]
    pub const fn polled(self) -> bool {
        matches!(self, Self::Adopted(a) if !a.armed())
    }
}

/// Whether an adopted socket's `sock_ops` callbacks are armed (`lifeline_common::sock::ADOPT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Adoption {
    Armed,
    /// A previous agent armed it (and was killed before the socket closed).
    AlreadyArmed,
    /// The TCP iterator has not run yet.
    Pending,
    /// The TCP iterator cannot load on this kernel.
    NoIterator,
    /// The iterator's `bpf_setsockopt` failed (before 6.12: callback flags are no option).
    Refused(Errno),
}

impl Adoption {
    #[must_use]
    pub const fn armed(self) -> bool {
        matches!(self, Self::Armed | Self::AlreadyArmed)
    }
}

/// What became of lifeline's keepalive on the socket (`lifeline_common::keepalive::KA_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Arming {
    /// In force with the record's values (the application's where they were stricter).
    #[default]
    Armed,
    /// In force, set without reading the socket's own first (before 6.1).
    SetUnread,
    /// Not asked for (`--keepalive off`).
    Off,
    /// A pre-existing socket the TCP iterator has not reached.
    Pending,
    /// A pre-existing socket on a kernel whose TCP iterator cannot load.
    NoIterator,
    Refused(Errno),
}

impl Arming {
    /// Whether keepalive is in force with the values recorded beside it.
    #[must_use]
    pub const fn in_force(self) -> bool {
        matches!(self, Self::Armed | Self::SetUnread)
    }
}

/// Linear retransmission timeouts on the socket (`lifeline_common::sock::LTO_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LinearTimeouts {
    /// Not asked for (`--stall-unanswered 0`), or the socket predates the agent.
    #[default]
    Off,
    Armed,
    /// Armed, but off for this trouble episode: the path to the peer is not known to work.
    Paused,
    Refused(Errno),
}

/// Whether the socket's keepalive is deferred to the application's own deadline while
/// lifeline only observes (`SockState::defer`, `lifeline_common::restore`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Deferred {
    #[default]
    No,
    /// Re-timed so the kernel's abort lands at the application's deadline (or only its user
    /// timeout back).
    ToDeadline,
    /// Keepalive off: the application has none.
    Off,
    Refused(Errno),
}

/// A process name as the kernel keeps it (`TASK_COMM_LEN`, NUL-padded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Comm(pub [u8; COMM_LEN]);

impl Comm {
    /// Up to its first NUL; `None` when the owner is unknown.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len());
        (end > 0).then(|| std::str::from_utf8(&self.0[..end]).unwrap_or("?"))
    }
}

/// What the probe knows about one watched socket, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub state: TcpState,
    pub origin: Origin,
    pub established: Mono,
    /// A lower bound of the last ACK progress: ESTABLISHED, or the last callback that found
    /// `snd_una` moved (no callback runs per ACK: `tcp_info` has the truth).
    pub last_ack: Mono,
    /// The first retransmission or RTO of the current trouble episode, if one is on.
    pub trouble: Option<Mono>,
    /// Segments sent and not yet acknowledged, as of the last callback.
    pub packets_out: u32,
    /// Bytes sent and not yet acknowledged, as of the last callback.
    pub unacked_bytes: u32,
    /// RTO expiries in the current trouble episode.
    pub rto_count: u32,
    /// Retransmitted segments in the current trouble episode.
    pub retrans_count: u32,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub owner_pid: u32,
    pub owner_comm: Comm,
    /// Why it is watched (`lifeline_common::watch::BY_*` bits); 0 for an adopted socket.
    pub reasons: u32,
    pub arming: Arming,
    /// The keepalive values the probe recorded as in force.
    pub keepalive: Keepalive,
    pub linear: LinearTimeouts,
    /// Keepalive probes that left with an octet of old data (fast probes).
    pub probe_bytes: u32,
    pub probe_srtt_us: u32,
    pub deferred: Deferred,
}

impl Default for Record {
    fn default() -> Self {
        let nowhere = SocketAddr::from(([0, 0, 0, 0], 0));
        Self {
            local: nowhere,
            peer: nowhere,
            state: TcpState::default(),
            origin: Origin::default(),
            established: Mono::ZERO,
            last_ack: Mono::ZERO,
            trouble: None,
            packets_out: 0,
            unacked_bytes: 0,
            rto_count: 0,
            retrans_count: 0,
            bytes_acked: 0,
            bytes_received: 0,
            owner_pid: 0,
            owner_comm: Comm::default(),
            reasons: 0,
            arming: Arming::default(),
            keepalive: Keepalive::default(),
            linear: LinearTimeouts::default(),
            probe_bytes: 0,
            probe_srtt_us: 0,
            deferred: Deferred::default(),
        }
    }
}

impl Record {
    /// The owner's process name, `None` when unknown.
    #[must_use]
    pub fn comm(&self) -> Option<&str> {
        self.owner_comm.as_str()
    }

    /// Whether the socket is ESTABLISHED, where the rules judge it.
    #[must_use]
    pub fn is_established(&self) -> bool {
        self.state == TcpState::Established
    }
}
