//! The endpoint rules (orphan migration, `--on-orphan log`, dead peer), without DNS or a
//! peer probe: the membership and the probe's finding are handed in.

use std::time::Duration;

use super::{
    endpoint::{DEAD_PEER_JITTER, QUIET_RECHECK},
    tests::{jitter, settings, sock},
    *,
};

fn orphan() -> (String, Membership) {
    (
        "api:6443".into(),
        Membership::Orphaned {
            absent_for: Duration::from_secs(40),
        },
    )
}

#[test]
fn an_orphan_migrates_after_its_jitter_and_only_at_a_quiet_moment() {
    let mut j = Judge::new(settings(), None);
    let rec = Record {
        state: TcpState::Established,
        last_ack: Mono::from_secs(99),
        ..Record::default()
    };
    let member = orphan();
    let s = Socket {
        member: Some(&member),
        ..sock(&rec)
    };
    let t0 = Mono::from_secs(100);
    let call = j.endpoint_reason(&s, Verdict::Healthy, None, t0);
    assert!(call.reason.is_none(), "not before its moment in the spread");
    let due = t0 + jitter(7, Duration::from_mins(1));
    assert_eq!(call.wake, Some(due - t0));
    assert_eq!(
        call.probe.map(|p| p.why),
        Some("left the endpoint's address set")
    );
    let busy = TcpInfo {
        state: 1,
        unacked: 3,
        ..TcpInfo::default()
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&busy), due);
    assert!(call.reason.is_none(), "requests in flight: wait");
    assert_eq!(call.wake, Some(QUIET_RECHECK));
    let quiet = TcpInfo {
        state: 1,
        ..TcpInfo::default()
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet), due);
    assert!(
        matches!(call.reason, Some(Reason::Orphaned { .. })),
        "{call:?}"
    );
}

#[test]
fn on_orphan_log_reports_once_and_never_kills() {
    let mut j = Judge::new(
        Settings {
            migrate: false,
            ..settings()
        },
        None,
    );
    let rec = Record {
        state: TcpState::Established,
        ..Record::default()
    };
    let member = orphan();
    let s = Socket {
        member: Some(&member),
        ..sock(&rec)
    };
    let quiet = TcpInfo {
        state: 1,
        ..TcpInfo::default()
    };
    let first = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet), Mono::from_secs(100));
    assert!(first.report_orphan.is_some() && first.reason.is_none());
    let again = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet), Mono::from_secs(100));
    assert!(again.report_orphan.is_none() && again.reason.is_none());
}

#[test]
fn a_dead_peer_kills_after_its_jitter_with_the_kernels_view() {
    let mut j = Judge::new(settings(), None);
    let rec = Record {
        state: TcpState::Established,
        ..Record::default()
    };
    let t0 = Mono::from_secs(100);
    let member = (
        "api:6443".to_owned(),
        Membership::Leaving {
            absent_for: Duration::ZERO,
            rotates: false,
        },
    );
    // The probe began 2 s after the socket last heard from its peer and found it dead 1.5 s
    // later, while another address of the endpoint accepted.
    let probe_started = t0.checked_sub(Duration::from_millis(1_500)).unwrap();
    let s = Socket {
        peer: Some(PeerProbe::Dead(DeadPeer {
            probe_started,
            found: t0,
        })),
        member: Some(&member),
        ..sock(&rec)
    };
    let silent = |at: Mono| TcpInfo {
        state: 1,
        last_ack_recv_ms: u32::try_from((at - probe_started).as_millis()).unwrap() + 2_000,
        last_data_recv_ms: 60_000,
        ..TcpInfo::default()
    };
    let due = t0 + jitter(7, DEAD_PEER_JITTER);
    if due > t0 {
        let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&silent(t0)), t0);
        assert!(call.reason.is_none());
        assert_eq!(call.wake, Some(due - t0));
    }
    assert!(
        j.endpoint_reason(&s, Verdict::Healthy, None, due)
            .reason
            .is_none(),
        "unread: no kill"
    );
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&silent(due)), due);
    assert!(matches!(call.reason, Some(Reason::DeadPeer { .. })));
    assert!(j.wants_info(&s, due), "the kernel's view is read once due");
}
