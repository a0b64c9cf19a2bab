//! Building a row from the probe's record and what the daemon knows beside it: the kernel's
//! view at the request, the verdict, the owner, the keepalive text, the endpoint.

use std::borrow::Cow;

use lifeline_common::features::ITER_CALLBACKS;

use super::{OwnerState, StatusRow, WatchSource, WatchedBy};
use crate::{
    endpoint::Standing,
    judge::{Adoption, Cookie, LinearTimeouts, Mono, Origin, Record, Verdict},
    kernel::diag::{DiagSock, states},
};

/// What a row says beyond the record: the verdict shown (`None`: closing, no longer
/// ESTABLISHED), the kernel's view of the socket at the request (`None` when the dump
/// failed), its owner, the keepalive column, the endpoint on its port, where its peer stands
/// in that endpoint's answers, and whether it is the endpoint's socket.
pub(crate) struct Extra<'a> {
    pub verdict: Option<Verdict>,
    pub kernel: Option<&'a DiagSock>,
    pub owner: OwnerState,
    pub keepalive: &'a str,
    pub endpoint: Option<(&'a str, Standing)>,
    /// With `endpoint`: whether the socket is that endpoint's connection (the recorded fact)
    /// or only on its port.
    pub endpoint_socket: Option<bool>,
}

/// The verdict label of a socket that is no longer ESTABLISHED.
pub(crate) const CLOSING: &str = "closing";

#[must_use]
pub(crate) fn row<'a>(cookie: Cookie, r: &'a Record, x: &Extra<'a>, now: Mono) -> StatusRow<'a> {
    let info = x.kernel.and_then(|k| k.info.as_ref());
    // The kernel's word on the record's trouble episode: still on while data is outstanding
    // and an RTO fired since the last ACK progress (`tcp_ack()` zeroes `icsk_retransmits`
    // when `snd_una` moves, and the backoff goes with the next RTT sample; the judge's
    // `from_info` reads the same two). The record's start of it is then current: that RTO's
    // callback began a new episode if `snd_una` had moved. A polled socket has no callbacks:
    // the time since its last ACK.
    // <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>
    let trouble = info.map(|i| i.unacked > 0 && (i.retransmits > 0 || i.backoff > 0));
    let callbacks = !r.origin.polled();
    let trouble_age_ms = match (trouble, info) {
        (Some(true), Some(i)) if !callbacks || r.trouble.is_none() => {
            Some(u64::from(i.last_ack_recv_ms))
        }
        (Some(false), _) => None,
        _ => r.trouble.map(|t| now.ms_since(t)),
    };
    StatusRow {
        cookie: cookie.0,
        local: r.local,
        peer: r.peer,
        state: x.kernel.map(|k| Cow::Borrowed(states::name(k.state))),
        owner_pid: (r.owner_pid != 0).then_some(r.owner_pid),
        owner_comm: r.comm().map(Cow::Borrowed),
        owner_state: x.owner,
        established_age_ms: now.ms_since(r.established),
        last_ack_age_ms: info.map_or_else(
            || now.ms_since(r.last_ack),
            |i| u64::from(i.last_ack_recv_ms),
        ),
        last_data_sent_age_ms: info.map(|i| u64::from(i.last_data_sent_ms)),
        last_data_recv_age_ms: info.map(|i| u64::from(i.last_data_recv_ms)),
        trouble_age_ms,
        unacked_segs: info.map_or(r.packets_out, |i| i.unacked),
        unacked_bytes: x.kernel.map_or(r.unacked_bytes, DiagSock::unacked_bytes),
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
        verdict: Cow::Borrowed(x.verdict.map_or(CLOSING, Verdict::label)),
        keepalive: Cow::Borrowed(x.keepalive),
        keepalive_probes: info.map(|i| i.probes),
        linear_timeouts: match r.linear {
            LinearTimeouts::Off => None,
            LinearTimeouts::Armed => Some(Cow::Borrowed("armed")),
            // Off for this trouble episode: the path to the peer is not known to work.
            LinearTimeouts::Paused => Some(Cow::Borrowed("paused")),
            LinearTimeouts::Refused(e) => Some(Cow::Owned(format!("refused (errno {e})"))),
        },
        probe_bytes: (r.probe_bytes != 0).then_some(r.probe_bytes),
        endpoint: x.endpoint.map(|e| Cow::Borrowed(e.0)),
        endpoint_member: x.endpoint.map(|e| e.1),
        endpoint_socket: x.endpoint.and(x.endpoint_socket),
        source: match r.origin {
            Origin::Adopted(_) => WatchSource::Adopted,
            Origin::SockOps => WatchSource::SockOps,
        },
        polled: match r.origin {
            Origin::Adopted(a) if !a.armed() => Some(Cow::Owned(polled_why(a))),
            _ => None,
        },
        watched_by: WatchedBy(r.reasons),
    }
}

/// Why an adopted socket is polled through `sock_diag` rather than followed by callbacks.
fn polled_why(adopt: Adoption) -> String {
    let (major, minor) = ITER_CALLBACKS.since;
    let needs = format!("arming its callbacks needs Linux {major}.{minor}");
    match adopt {
        Adoption::Pending => "its callbacks are not armed yet".to_owned(),
        Adoption::NoIterator => format!("the TCP iterator cannot load on this kernel; {needs}"),
        Adoption::Refused(errno) => format!(
            "the TCP iterator cannot set callback flags on this kernel (errno {errno}); {needs}"
        ),
        // Not polled: never asked.
        Adoption::Armed | Adoption::AlreadyArmed => String::new(),
    }
}
