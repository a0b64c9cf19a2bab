//! One row of `lifeline status`, the only type a row has: the daemon builds it from a socket
//! as the kernel reports it at the request (one `sock_diag` dump, `daemon/table.rs`) and as
//! the probe recorded it (`row.rs`), writes it by hand (`json.rs`), and the client reads the
//! same type back (its `Deserialize`) and renders it (`status/table.rs`). The `Serialize`
//! derive is the reference the hand-written JSON is tested against. What the kernel says
//! wins: state, last ACK and data, what is outstanding, retransmissions, and whether the
//! trouble episode the record remembers is still going on (no callback runs when a socket
//! recovers, so the record alone would keep it). An absent field is `None` (none is written
//! as `null`); the daemon's rows borrow their texts (`Cow::Borrowed`, shared between rows),
//! because 100,000 rows are built whenever `lifeline status` asks; the client's own them.

use std::{borrow::Cow, fmt::Display, net::SocketAddr};

use serde::{Deserialize, Serialize, Serializer};

use crate::endpoint::Standing;

mod json;
pub(crate) mod kernel;
pub(crate) mod owner;
mod row;
mod watched_by;

pub(crate) use owner::{OwnerChecks, OwnerState};
pub(crate) use row::{CLOSING, Extra, row};
pub(crate) use watched_by::WatchedBy;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StatusRow<'a> {
    pub cookie: u64,
    #[serde(serialize_with = "display")]
    pub local: SocketAddr,
    #[serde(serialize_with = "display")]
    pub peer: SocketAddr,
    /// The kernel's TCP state at the request, as `ss` names it ("ESTABLISHED",
    /// "FIN-WAIT-1", ...); absent when the kernel could not be asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_comm: Option<Cow<'a, str>>,
    /// "no owner" (no process holds the socket any more) or "exited" (the recorded owner
    /// has exited, another process holds it); absent while the owner holds it.
    #[serde(default, skip_serializing_if = "OwnerState::holds")]
    pub owner_state: OwnerState,
    pub established_age_ms: u64,
    pub last_ack_age_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_data_sent_age_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_data_recv_age_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trouble_age_ms: Option<u64>,
    pub unacked_segs: u32,
    pub unacked_bytes: u32,
    pub retransmits: u32,
    pub rto_count: u32,
    /// Every retransmission of the socket's life (the kernel's count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_retrans: Option<u32>,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub verdict: Cow<'a, str>,
    /// Keepalive in force ("10s,3s,3"), "off", or why it is not armed.
    pub keepalive: Cow<'a, str>,
    /// Keepalive probes unanswered, when the kernel's `tcp_info` was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive_probes: Option<u8>,
    /// Linear retransmission timeouts: "armed", or "refused (errno N)"; absent when not
    /// asked for (`--stall-unanswered 0`, or a socket older than the agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_timeouts: Option<Cow<'a, str>>,
    /// Keepalive probes that left with an octet of old data (fast probes); absent while none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_bytes: Option<u32>,
    /// The endpoint on this peer's port, and where its peer's address stands in that
    /// endpoint's answers: "in-set", "leaving", "orphaned", "unknown" (no answer yet) or
    /// "never-held" (no answer held it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_member: Option<Standing>,
    /// With `endpoint`: whether the socket is the endpoint's connection (its address was in
    /// the answers when it connected, when lifeline adopted it, or since). Only these are
    /// judged by DNS; the others by stall and silence alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_socket: Option<bool>,
    pub source: WatchSource,
    /// For an adopted socket whose callbacks the kernel could not arm: why; the agent then
    /// reads its `tcp_info` every sweep (shown as SOURCE `polled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polled: Option<Cow<'a, str>>,
    /// Why it is watched (what `--cgroup`, `--comm` and `--endpoint-clients` select).
    #[serde(default)]
    pub watched_by: WatchedBy,
}

/// How the probe came to watch a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum WatchSource {
    /// Seen at its connect.
    #[serde(rename = "sock_ops")]
    SockOps,
    /// Older than the agent, found by `sock_diag`.
    #[serde(rename = "adopted")]
    Adopted,
}

impl WatchSource {
    /// As the row's JSON and the table's SOURCE column name it.
    #[must_use]
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::SockOps => "sock_ops",
            Self::Adopted => "adopted",
        }
    }
}

fn display<S: Serializer>(v: &impl Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

#[cfg(test)]
mod tests;
