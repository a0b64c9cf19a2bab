//! What the judge is told, in its own types: the kernel's view of a socket (`TcpInfo`, which
//! the agent's `sock_diag` reader fills), where a peer stands in its endpoint's DNS answers
//! (`Membership`, which the agent's endpoint view works out), and what a confirmed failure
//! of the unit's socket is answered with (`ActionMode`, which the agent maps from its flag);
//! and one socket as the loop hands it in (`Socket`, `Read`).

use std::{net::SocketAddr, time::Duration};

use super::{Cookie, Record, Verdict};

/// The kernel's own view of a TCP socket, as `ss -i` shows it: the few `struct tcp_info`
/// fields lifeline reads (`include/uapi/linux/tcp.h`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpInfo {
    pub state: u8,
    /// Consecutive RTO retransmissions of the head segment (`icsk_retransmits`).
    pub retransmits: u8,
    /// Unanswered zero-window or keepalive probes (`icsk_probes_out`).
    pub probes: u8,
    pub backoff: u8,
    pub rto_us: u32,
    /// Segments sent and not yet acknowledged.
    pub unacked: u32,
    pub last_data_sent_ms: u32,
    pub last_data_recv_ms: u32,
    /// Milliseconds since any ACK arrived (`tcp_sock.rcv_tstamp`).
    pub last_ack_recv_ms: u32,
    pub rtt_us: u32,
    pub total_retrans: u32,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    /// Bytes written and not yet sent (`write_seq - snd_nxt`, Linux 4.6).
    pub notsent_bytes: u32,
}

/// Where a peer address stands relative to the endpoint's set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    InSet,
    /// Missing from the answers, for less than the grace so far. `rotates`: the endpoint's
    /// answers brought an address back within the grace lately (a server answering with
    /// rotating subsets), so this one may be back in the next answer too.
    Leaving {
        absent_for: Duration,
        rotates: bool,
    },
    /// Missing from every successful answer for at least the grace.
    Orphaned {
        absent_for: Duration,
    },
    /// No successful answer yet: nothing can be said.
    Unknown,
    /// No answer lifeline got ever held it (or it left them long ago): a socket to it is not
    /// the endpoint's by DNS, whatever its port.
    NeverHeld,
}

impl Membership {
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::InSet => "in-set",
            Self::Leaving { .. } => "leaving",
            Self::Orphaned { .. } => "orphaned",
            Self::Unknown => "unknown",
            Self::NeverHeld => "never-held",
        }
    }
}

/// What a confirmed failure of `--restart-unit`'s own socket is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionMode {
    /// Kill the socket; escalate to a restart only when that is not enough.
    Kill,
    /// Ask for a restart of the unit instead of killing.
    Restart,
}

/// One watched socket as the daemon sees it in this sweep.
pub struct Socket<'a> {
    pub cookie: Cookie,
    pub rec: &'a Record,
    /// A pre-existing socket the probe could not arm: judged from `tcp_info` alone.
    pub polled: bool,
    /// Its endpoint, when the socket is that endpoint's connection (the fact recorded per
    /// socket, `endpoint::Members`), and where its peer stands in that endpoint's set. `None`
    /// for every other socket: only the evidence verdicts (stalled, silent) apply to it.
    pub member: Option<&'a (String, Membership)>,
    /// An endpoint is configured: only its own connections then show a recovery after a
    /// kill (without one, every socket to the port does).
    pub followed: bool,
    /// The latest peer probe of its peer (running or found), for the endpoint's sockets.
    pub peer: Option<super::PeerProbe>,
}

impl Socket<'_> {
    /// The peer probe's finding that its peer is dead, while another address accepted.
    #[must_use]
    pub fn dead_peer(&self) -> Option<super::DeadPeer> {
        match self.peer {
            Some(super::PeerProbe::Dead(d)) => Some(d),
            _ => None,
        }
    }
}

/// What reading a socket's `tcp_info` gave.
#[derive(Clone, Debug)]
pub enum Read {
    Info(TcpInfo),
    /// The kernel answered without `INET_DIAG_INFO`.
    NoInfo,
    /// Closed between the map read and now.
    Gone,
    /// The request failed (the daemon logs why): never act on it.
    Unreadable,
}

/// A watched socket's summary for the checks that span sockets (recovery after a kill).
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    pub peer: SocketAddr,
    /// Whether it is the endpoint's connection; `None` without a configured endpoint.
    pub endpoint_socket: Option<bool>,
    pub verdict: Verdict,
    pub established_age: Duration,
}
