//! One row of `lifeline status`: a socket as the kernel reports it at the request (one
//! `sock_diag` dump, `daemon/table.rs`) and as the probe recorded it, written straight from
//! both (`json.rs`; the `Serialize` derive is the reference it is tested against). What the
//! kernel says wins: state, last ACK and data, what is outstanding, retransmissions, and
//! whether the trouble episode the record remembers is still going on (no callback runs when
//! a socket recovers, so the record alone would keep it). Field for field what `status::SocketStatus` reads back (an absent field is
//! `None` there, so none is written as `null`); nothing is allocated per row (the texts are
//! shared), because 100,000 rows are built whenever `lifeline status` asks.

use std::{fmt::Display, net::SocketAddr};

use lifeline_common::{
    SockState,
    features::ITER_CALLBACKS,
    sock::{ADOPT_NO_ITERATOR, ADOPT_PENDING, SOURCE_ADOPTED, adopt_armed},
    watch::{BY_CGROUP, BY_COMM, BY_ENDPOINT},
};
use serde::{Serialize, Serializer, ser::SerializeSeq};

use crate::{
    judge::Verdict,
    kernel::{
        clock,
        diag::{DiagSock, states},
    },
};

mod json;
pub mod kernel;
pub mod owner;

pub use owner::{Owner, Owners};

#[derive(Serialize)]
pub struct Row<'a> {
    cookie: u64,
    #[serde(serialize_with = "display")]
    local: SocketAddr,
    #[serde(serialize_with = "display")]
    peer: SocketAddr,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner_pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner_comm: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner_state: Option<&'static str>,
    established_age_ms: u64,
    last_ack_age_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_data_sent_age_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_data_recv_age_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trouble_age_ms: Option<u64>,
    unacked_segs: u32,
    unacked_bytes: u32,
    retransmits: u32,
    rto_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_retrans: Option<u32>,
    bytes_acked: u64,
    bytes_received: u64,
    verdict: &'static str,
    keepalive: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    keepalive_probes: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint_member: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint_socket: Option<bool>,
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    polled: Option<String>,
    #[serde(serialize_with = "watched_by")]
    watched_by: u32,
}

/// What a row says beyond the record: the verdict shown (`None`: closing, no longer
/// ESTABLISHED), the kernel's view of the socket at the request (`None` when the dump
/// failed), its owner, the keepalive column, the endpoint on its port, where its peer stands
/// in that endpoint's answers, and whether it is the endpoint's socket.
pub struct Extra<'a> {
    pub verdict: Option<Verdict>,
    pub kernel: Option<&'a DiagSock>,
    pub owner: Owner,
    pub keepalive: &'a str,
    pub endpoint: Option<(&'a str, &'static str)>,
    /// With `endpoint`: whether the socket is that endpoint's connection (the recorded fact)
    /// or only on its port.
    pub endpoint_socket: Option<bool>,
}

/// The verdict label of a socket that is no longer ESTABLISHED.
pub const CLOSING: &str = "closing";

#[must_use]
pub fn row<'a>(cookie: u64, r: &'a SockState, x: &Extra<'a>, now: u64) -> Row<'a> {
    let info = x.kernel.and_then(|k| k.info.as_ref());
    // The kernel's word on the record's trouble episode: still on while data is outstanding
    // and an RTO fired since the last ACK progress (`tcp_ack()` zeroes `icsk_retransmits`
    // when `snd_una` moves, and the backoff goes with the next RTT sample; the judge's
    // `from_info` reads the same two). The record's start of it is then current: that RTO's
    // callback began a new episode if `snd_una` had moved. A polled socket has no callbacks:
    // the time since its last ACK.
    // <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>
    let trouble = info.map(|i| i.unacked > 0 && (i.retransmits > 0 || i.backoff > 0));
    let callbacks = r.source != SOURCE_ADOPTED || adopt_armed(r.adopt);
    let trouble_age_ms = match (trouble, info) {
        (Some(true), Some(i)) if !callbacks || r.trouble_ns == 0 => {
            Some(u64::from(i.last_ack_recv_ms))
        }
        (Some(false), _) => None,
        _ => (r.trouble_ns != 0).then(|| clock::age_ms(now, r.trouble_ns)),
    };
    Row {
        cookie,
        local: r.local(),
        peer: r.peer(),
        state: x.kernel.map(|k| states::name(k.state)),
        owner_pid: (r.owner_pid != 0).then_some(r.owner_pid),
        owner_comm: r.comm(),
        owner_state: x.owner.label(),
        established_age_ms: clock::age_ms(now, r.established_ns),
        last_ack_age_ms: info.map_or_else(
            || clock::age_ms(now, r.last_ack_ns),
            |i| u64::from(i.last_ack_recv_ms),
        ),
        last_data_sent_age_ms: info.map(|i| u64::from(i.last_data_sent_ms)),
        last_data_recv_age_ms: info.map(|i| u64::from(i.last_data_recv_ms)),
        trouble_age_ms,
        unacked_segs: info.map_or(r.packets_out, |i| i.unacked),
        unacked_bytes: x.kernel.map_or(r.unacked_bytes(), DiagSock::unacked_bytes),
        retransmits: if trouble == Some(false) {
            0
        } else {
            r.retrans_count
        },
        // The kernel's count of RTOs since the last ACK progress.
        rto_count: info.map_or(r.rto_count, |i| u32::from(i.retransmits)),
        total_retrans: info.map(|i| i.total_retrans),
        bytes_acked: info.map_or(r.bytes_acked, |i| i.bytes_acked),
        bytes_received: info.map_or(r.bytes_received, |i| i.bytes_received),
        verdict: x.verdict.map_or(CLOSING, Verdict::label),
        keepalive: x.keepalive,
        keepalive_probes: info.map(|i| i.probes),
        endpoint: x.endpoint.map(|e| e.0),
        endpoint_member: x.endpoint.map(|e| e.1),
        endpoint_socket: x.endpoint.and(x.endpoint_socket),
        source: if r.source == SOURCE_ADOPTED {
            "adopted"
        } else {
            "sock_ops"
        },
        polled: (r.source == SOURCE_ADOPTED && !adopt_armed(r.adopt)).then(|| polled_why(r.adopt)),
        watched_by: r.reasons,
    }
}

fn display<S: Serializer>(v: &impl Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Why it is watched: "cgroup", "comm", "endpoint" (what `--cgroup`, `--comm` and
/// `--endpoint-clients` select), by the record's reason bits.
fn reasons(bits: u32) -> impl Iterator<Item = &'static str> {
    [
        (BY_CGROUP, "cgroup"),
        (BY_COMM, "comm"),
        (BY_ENDPOINT, "endpoint"),
    ]
    .into_iter()
    .filter(move |(bit, _)| bits & bit != 0)
    .map(|(_, name)| name)
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes the field by reference"
)]
fn watched_by<S: Serializer>(bits: &u32, s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(None)?;
    for name in reasons(*bits) {
        seq.serialize_element(name)?;
    }
    seq.end()
}

/// Why an adopted socket is polled through `sock_diag` rather than followed by callbacks.
fn polled_why(adopt: i32) -> String {
    let (major, minor) = ITER_CALLBACKS.since;
    let needs = format!("arming its callbacks needs Linux {major}.{minor}");
    match adopt {
        ADOPT_PENDING => "its callbacks are not armed yet".to_owned(),
        ADOPT_NO_ITERATOR => format!("the TCP iterator cannot load on this kernel; {needs}"),
        errno => format!(
            "the TCP iterator cannot set callback flags on this kernel (errno {}); {needs}",
            -errno
        ),
    }
}

#[cfg(test)]
mod tests;
