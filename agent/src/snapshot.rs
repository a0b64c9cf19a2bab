//! One row of `lifeline status`: a socket as the probe recorded it and the kernel reports it.

use lifeline_common::{
    SockState,
    features::ITER_CALLBACKS,
    sock::{ADOPT_NO_ITERATOR, ADOPT_PENDING, SOURCE_ADOPTED, adopt_armed},
    watch::{BY_CGROUP, BY_COMM, BY_ENDPOINT},
};

use crate::{clock, diag::TcpInfo, judge::Verdict, status::SocketStatus};

pub fn row(
    cookie: u64,
    r: &SockState,
    info: Option<&TcpInfo>,
    verdict: Verdict,
    keepalive: String,
    now: u64,
) -> SocketStatus {
    SocketStatus {
        cookie,
        local: r.local().to_string(),
        peer: r.peer().to_string(),
        owner_pid: (r.owner_pid != 0).then_some(r.owner_pid),
        owner_comm: r.comm().map(str::to_owned),
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
        verdict: verdict.label().to_owned(),
        keepalive,
        keepalive_probes: info.map(|i| i.probes),
        endpoint: None,
        endpoint_member: None,
        source: if r.source == SOURCE_ADOPTED {
            "adopted"
        } else {
            "sock_ops"
        }
        .to_owned(),
        polled: (r.source == SOURCE_ADOPTED && !adopt_armed(r.adopt)).then(|| polled_why(r.adopt)),
        watched_by: [
            (BY_CGROUP, "cgroup"),
            (BY_COMM, "comm"),
            (BY_ENDPOINT, "endpoint"),
        ]
        .into_iter()
        .filter(|(bit, _)| r.reasons & bit != 0)
        .map(|(_, name)| name.to_owned())
        .collect(),
    }
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
