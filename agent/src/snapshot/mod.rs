//! One row of `lifeline status`: a socket as the probe recorded it and the kernel reports it,
//! written straight from the record (`json.rs`; the `Serialize` derive is the reference it is
//! tested against). Field for field what `status::SocketStatus` reads back (an absent field is
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

use crate::{clock, diag::TcpInfo, judge::Verdict};

mod json;

#[derive(Serialize)]
pub struct Row<'a> {
    cookie: u64,
    #[serde(serialize_with = "display")]
    local: SocketAddr,
    #[serde(serialize_with = "display")]
    peer: SocketAddr,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner_pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner_comm: Option<&'a str>,
    established_age_ms: u64,
    last_ack_age_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    trouble_age_ms: Option<u64>,
    unacked_segs: u32,
    unacked_bytes: u32,
    retransmits: u32,
    rto_count: u32,
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

/// What a row says beyond the record: the judge's verdict, the kernel's `tcp_info` when it
/// was read in the last sweep, the keepalive column, the endpoint on its port, where its
/// peer stands in that endpoint's answers, and whether it is the endpoint's socket.
pub struct Extra<'a> {
    pub verdict: Verdict,
    pub info: Option<&'a TcpInfo>,
    pub keepalive: &'a str,
    pub endpoint: Option<(&'a str, &'static str)>,
    /// With `endpoint`: whether the socket is that endpoint's connection (the recorded fact)
    /// or only on its port.
    pub endpoint_socket: Option<bool>,
}

#[must_use]
pub fn row<'a>(cookie: u64, r: &'a SockState, x: &Extra<'a>, now: u64) -> Row<'a> {
    let info = x.info;
    Row {
        cookie,
        local: r.local(),
        peer: r.peer(),
        owner_pid: (r.owner_pid != 0).then_some(r.owner_pid),
        owner_comm: r.comm(),
        established_age_ms: clock::age_ms(now, r.established_ns),
        last_ack_age_ms: info.map_or_else(
            || clock::age_ms(now, r.last_ack_ns),
            |i| u64::from(i.last_ack_recv_ms),
        ),
        trouble_age_ms: (r.trouble_ns != 0).then(|| clock::age_ms(now, r.trouble_ns)),
        unacked_segs: info.map_or(r.packets_out, |i| i.unacked),
        unacked_bytes: r.unacked_bytes(),
        retransmits: r.retrans_count,
        rto_count: r.rto_count,
        bytes_acked: r.bytes_acked,
        bytes_received: r.bytes_received,
        verdict: x.verdict.label(),
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
mod tests {
    use super::*;
    use crate::status::SocketStatus;

    /// 198.51.100.2:40000 -> 203.0.113.7:6443, owned by pid 812 named `comm`.
    pub(super) fn v4_record(comm: &[u8], reasons: u32) -> SockState {
        let mut rec = SockState {
            family: 2,
            local_port: 40_000,
            peer_port: 6443,
            owner_pid: 812,
            reasons,
            ..SockState::default()
        };
        rec.local_addr[..4].copy_from_slice(&[198, 51, 100, 2]);
        rec.peer_addr[..4].copy_from_slice(&[203, 0, 113, 7]);
        rec.owner_comm[..comm.len()].copy_from_slice(comm);
        rec
    }

    #[test]
    fn a_row_reads_back_as_the_status_client_expects() {
        let rec = SockState {
            established_ns: 1_000_000_000,
            last_ack_ns: 3_000_000_000,
            ..v4_record(b"kubelet", BY_CGROUP | BY_ENDPOINT)
        };
        let x = Extra {
            verdict: Verdict::Idle,
            info: None,
            keepalive: "2s,1s,20",
            endpoint: Some(("api:6443", "in-set")),
            endpoint_socket: Some(true),
        };
        let mut json = Vec::new();
        row(7, &rec, &x, 5_000_000_000).write_json(&mut json);
        let back: SocketStatus = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            (back.local.as_str(), back.peer.as_str()),
            ("198.51.100.2:40000", "203.0.113.7:6443")
        );
        assert_eq!(back.owner_comm.as_deref(), Some("kubelet"));
        assert_eq!(
            (back.established_age_ms, back.last_ack_age_ms),
            (4_000, 2_000)
        );
        assert_eq!(
            (back.verdict.as_str(), back.keepalive.as_str()),
            ("idle", "2s,1s,20")
        );
        assert_eq!(back.endpoint_member.as_deref(), Some("in-set"));
        assert_eq!(back.endpoint_socket, Some(true));
        assert_eq!(back.watched_by, ["cgroup", "endpoint"]);
        assert_eq!((back.source.as_str(), back.polled), ("sock_ops", None));
    }
}
