//! The early migration's edges (`early.rs`): rotating answers, an answer that comes in time,
//! a retransmission before the first RTO. Fixtures in `tests_early.rs`.

use std::time::Duration;

use super::{
    early::EARLY_JITTER,
    tests::{settings, sock},
    tests_early::{LEAVING, leaving, member, probed, rec},
    *,
};

#[test]
fn a_leaving_peer_of_rotating_answers_waits_for_the_grace_even_unanswered() {
    let mut j = Judge::new(settings(), None);
    let r = rec();
    let m = member(Membership::Leaving {
        absent_for: Duration::from_secs(5),
        rotates: true,
    });
    let s = Socket {
        member: Some(&m),
        ..sock(&r)
    };
    let t0 = Mono::from_secs(100);
    for at in [t0, t0 + EARLY_JITTER] {
        let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(5_000)), at);
        assert!(
            call.reason.is_none(),
            "it may be in the next answer: {call:?}"
        );
    }
    // Orphaned (absent for the whole grace) it has moved, rotation or not.
    let m = member(Membership::Orphaned {
        absent_for: Duration::from_secs(40),
    });
    let s = Socket {
        member: Some(&m),
        ..sock(&r)
    };
    let _ = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(5_000)), t0);
    let call = j.endpoint_reason(
        &s,
        Verdict::Healthy,
        Some(&probed(5_100)),
        t0 + EARLY_JITTER,
    );
    assert!(
        matches!(
            call.reason,
            Some(Reason::Orphaned {
                trouble: Some(Trouble::Unanswered),
                ..
            })
        ),
        "{call:?}"
    );
}

#[test]
fn an_answer_in_time_cancels_a_pending_early_migration() {
    let (mut j, r, m) = leaving();
    let s = Socket {
        member: Some(&m),
        ..sock(&r)
    };
    let t0 = Mono::from_secs(100);
    let _ = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(1_600)), t0);
    // The probe was answered after all before the moment: nothing left to act on.
    let quiet = TcpInfo {
        state: 1,
        last_ack_recv_ms: 10,
        ..TcpInfo::default()
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet), t0 + EARLY_JITTER);
    assert!(call.reason.is_none(), "{call:?}");
    // Only the look when its next probe's answer would be overdue (1.3 s after the ACK).
    assert_eq!(call.wake, Some(Duration::from_millis(1_290)), "{call:?}");
    assert!(
        !j.due(Mono::from_secs(100)).any(|c| c == Cookie(7)),
        "nothing pending"
    );
    // An RTO with data outstanding, later: early again, from a new moment.
    let rto = TcpInfo {
        state: 1,
        unacked: 1,
        retransmits: 2,
        ..TcpInfo::default()
    };
    let t1 = t0 + Duration::from_secs(3);
    let _ = j.endpoint_reason(&s, Verdict::Suspect, Some(&rto), t1);
    let call = j.endpoint_reason(&s, Verdict::Suspect, Some(&rto), t1 + EARLY_JITTER);
    assert!(
        matches!(
            call.reason,
            Some(Reason::Orphaned {
                trouble: Some(Trouble::Retransmitting),
                ..
            })
        ),
        "{call:?}"
    );
}

#[test]
fn a_left_peer_retransmitting_before_its_first_rto_is_looked_at_again_soon() {
    let mut j = Judge::new(settings(), None);
    let r = Record {
        trouble: Some(Mono::from_nanos(5)),
        packets_out: 1,
        ..rec()
    };
    let m = member(LEAVING);
    let s = Socket {
        member: Some(&m),
        ..sock(&r)
    };
    // A tail loss probe went out (the record's trouble), no RTO has fired yet.
    let tlp = TcpInfo {
        state: 1,
        unacked: 1,
        ..TcpInfo::default()
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&tlp), Mono::from_secs(100));
    assert!(call.reason.is_none());
    assert_eq!(call.wake, Some(super::endpoint::QUIET_RECHECK));
}

#[test]
fn an_in_set_sockets_overdue_probe_is_looked_at_and_re_resolves_its_endpoint() {
    let mut j = Judge::new(settings(), None);
    j.set_unanswered_news(true);
    let r = rec();
    let m = member(Membership::InSet);
    let s = Socket {
        member: Some(&m),
        ..sock(&r)
    };
    let t0 = Mono::from_secs(100);
    let answered = TcpInfo {
        state: 1,
        last_ack_recv_ms: 200,
        ..TcpInfo::default()
    };
    assert!(j.wants_info(&s, t0), "no look scheduled yet: read once");
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&answered), t0);
    assert!(!call.resolve, "its probe was answered");
    assert!(!j.wants_info(&s, t0), "its next look is scheduled");
    // IDLE (1 s) + an RTO (200 ms) + the timer's slack after the last ACK, 200 ms ago.
    let overdue = t0 + Duration::from_millis(1_100);
    assert_eq!(call.look_in, Some(Duration::from_millis(1_100)));
    assert!(
        !j.due(overdue - Duration::from_millis(1))
            .any(|c| c == Cookie(7)),
        "not before"
    );
    assert!(j.due(overdue).any(|c| c == Cookie(7)), "visited then");
    assert!(j.wants_info(&s, overdue), "and read");
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(1_300)), overdue);
    assert!(call.resolve, "unanswered: the endpoint may have moved");
    assert!(call.reason.is_none(), "in the set: nothing to migrate");
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(1_050)), overdue);
    assert!(!call.resolve, "a probe in flight is no trouble");
}

#[test]
fn an_endpoint_sockets_first_probe_overdue_opens_its_fast_phase_and_nothing_else_does() {
    let r = rec();
    let t0 = Mono::from_secs(100);
    let in_set = member(Membership::InSet);
    let leaving = member(LEAVING);
    let hasten = |m: Option<&(String, Membership)>, info: TcpInfo| {
        let mut j = Judge::new(settings(), None);
        let s = Socket {
            member: m,
            ..sock(&r)
        };
        j.endpoint_reason(&s, Verdict::Healthy, Some(&info), t0)
            .hasten
    };
    // The look the overdue schedule brings, half an interval after the first probe.
    assert!(hasten(Some(&in_set), probed(1_500)), "in the set");
    assert!(hasten(Some(&leaving), probed(1_500)), "its peer left too");
    // Still in flight: a healthy peer's answer may yet come.
    assert!(!hasten(Some(&in_set), probed(1_200)));
    // The kernel opened the phase at the second probe already.
    let two = TcpInfo {
        probes: 2,
        ..probed(2_100)
    };
    assert!(!hasten(Some(&in_set), two));
    // Data outstanding: RTOs, not keepalive probes, are its evidence.
    let busy = TcpInfo {
        unacked: 1,
        retransmits: 1,
        ..probed(1_500)
    };
    assert!(!hasten(Some(&in_set), busy));
    // Not the endpoint's socket: no overdue look, nothing to hasten.
    assert!(!hasten(None, probed(1_500)));
}
