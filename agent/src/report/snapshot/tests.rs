//! The row as the status client reads it back.

use lifeline_common::{
    SockState,
    watch::{BY_CGROUP, BY_ENDPOINT},
};

use super::*;
use crate::{
    endpoint::Standing,
    judge::{Cookie, Mono, Verdict},
    kernel::record::decode,
};

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
        verdict: Some(Verdict::Idle),
        kernel: None,
        owner: OwnerState::Holds,
        keepalive: "2s,1s,20",
        endpoint: Some(("api:6443", Standing::InSet)),
        endpoint_socket: Some(true),
    };
    let mut json = Vec::new();
    row(
        Cookie(7),
        &decode(&rec),
        &x,
        Mono::from_nanos(5_000_000_000),
    )
    .write_json(&mut json);
    let back: StatusRow<'static> = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        (back.local.to_string(), back.peer.to_string()),
        (
            "198.51.100.2:40000".to_owned(),
            "203.0.113.7:6443".to_owned()
        )
    );
    assert_eq!(back.owner_comm.as_deref(), Some("kubelet"));
    assert_eq!(
        (back.established_age_ms, back.last_ack_age_ms),
        (4_000, 2_000)
    );
    assert_eq!((&*back.verdict, &*back.keepalive), ("idle", "2s,1s,20"));
    assert_eq!(back.endpoint_member, Some(Standing::InSet));
    assert_eq!(back.endpoint_socket, Some(true));
    assert!(back.watched_by.names().eq(["cgroup", "endpoint"]));
    assert_eq!((back.source, back.polled), (WatchSource::SockOps, None));
    assert_eq!(back.owner_state, OwnerState::Holds);
}
