//! The endpoint rules ask for the recorded fact: a socket that is not the endpoint's
//! connection (`Socket::member` is `None`) is never probed, never dead by its peer, never
//! orphaned, and never counts as the endpoint's recovery after a kill.

use std::time::Duration;

use super::*;
use crate::ActionMode;

fn quiet() -> TcpInfo {
    TcpInfo {
        state: 1,
        ..TcpInfo::default()
    }
}

#[test]
fn a_socket_that_is_not_the_endpoints_gets_no_endpoint_rule() {
    let mut j = Judge::new(super::tests::settings(), None);
    let rec = Record {
        state: TcpState::Established,
        trouble: Some(Mono::from_nanos(5)),
        peer: std::net::SocketAddr::from(([0, 0, 0, 0], 6443)),
        ..Record::default()
    };
    let t0 = Mono::from_secs(100);
    // Even with a dead result for its peer, and a trouble episode: nothing from DNS.
    let s = Socket {
        cookie: Cookie(3),
        rec: &rec,
        polled: false,
        member: None,
        followed: true,
        peer: Some(PeerProbe::Dead(DeadPeer {
            probe_started: t0,
            found: t0,
        })),
    };
    for later in [0u64, 2, 120] {
        let at = t0 + Duration::from_secs(later);
        let call = j.endpoint_reason(&s, Verdict::Suspect, Some(&quiet()), at);
        assert!(
            call.reason.is_none() && call.probe.is_none() && call.wake.is_none(),
            "{call:?}"
        );
        assert!(!j.wants_info(&s, at), "no endpoint rule reads its state");
    }
    // The same socket as the endpoint's, orphaned: probed, and migrated in time.
    let member = (
        "api:6443".to_owned(),
        Membership::Orphaned {
            absent_for: Duration::from_secs(40),
        },
    );
    let s = Socket {
        member: Some(&member),
        followed: true,
        peer: None,
        ..s
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet()), t0);
    assert_eq!(
        call.probe.map(|p| p.why),
        Some("left the endpoint's address set")
    );
    let due = t0 + super::tests::SEED.jitter(Cookie(3), Duration::from_mins(1));
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet()), due);
    assert!(matches!(call.reason, Some(Reason::Orphaned { .. })));
}

#[test]
fn only_the_endpoints_own_connection_is_a_recovery() {
    let esc = Escalation::new(ActionMode::Kill, Duration::from_secs(30));
    let mut j = Judge::new(super::tests::settings(), Some(esc));
    let t0 = Mono::from_secs(100);
    let rec = Record {
        state: TcpState::Established,
        peer: std::net::SocketAddr::from(([0, 0, 0, 0], 6443)),
        ..Record::default()
    };
    let k = Kill {
        cookie: Cookie(1),
        rec,
        info: quiet(),
        reason: Reason::Dead(Verdict::Stalled),
        evidence: super::tests::evidence(),
        path_epoch: 0,
        whose: super::tests::unit_socket(),
    };
    assert!(j.outcome(&k, &Outcome::Killed, t0).is_none());
    let other = Seen {
        peer: rec.peer,
        endpoint_socket: Some(false),
        verdict: Verdict::Healthy,
        established_age: Duration::from_secs(1),
    };
    let esc = j.escalation.as_mut().unwrap();
    let (due, back) = esc.after_sweep(&[other], t0 + Duration::from_secs(5));
    assert!(
        due.is_empty() && back.is_empty(),
        "another service on the port is no recovery"
    );
    let own = Seen {
        endpoint_socket: Some(true),
        ..other
    };
    let (due, back) = esc.after_sweep(&[other, own], t0 + Duration::from_secs(6));
    assert!(
        due.is_empty() && back.len() == 1,
        "the endpoint's re-dial is"
    );
}
