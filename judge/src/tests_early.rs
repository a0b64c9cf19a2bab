//! The early migration (`early.rs`): a socket whose peer left the endpoint's answers and
//! whose own round trip failed moves within `EARLY_JITTER`; one whose peer left but still
//! answers keeps the slow migration; trouble alone, with the peer still in the set, is no
//! reason here.

use std::time::Duration;

use lifeline_common::Keepalive;

use super::{
    early::{EARLY_JITTER, trouble},
    tests::{jitter, settings, sock},
    *,
};

/// lifeline's default keepalive, in force on the socket.
const KA: Keepalive = Keepalive {
    idle_s: 1,
    intvl_s: 1,
    cnt: 20,
    user_timeout_ms: 0,
};

pub(super) fn rec() -> Record {
    Record {
        state: TcpState::Established,
        keepalive: KA,
        ..Record::default()
    }
}

pub(super) fn member(m: Membership) -> (String, Membership) {
    ("api:6443".into(), m)
}

pub(super) const LEAVING: Membership = Membership::Leaving {
    absent_for: Duration::ZERO,
    rotates: false,
};

/// A judge at the test settings, and a socket record whose peer left the answer.
pub(super) fn leaving() -> (Judge, Record, (String, Membership)) {
    (Judge::new(settings(), None), rec(), member(LEAVING))
}

/// Idle, one probe out, nothing from the peer for `ms`.
pub(super) fn probed(ms: u32) -> TcpInfo {
    TcpInfo {
        state: 1,
        probes: 1,
        last_ack_recv_ms: ms,
        ..TcpInfo::default()
    }
}

#[test]
fn a_probe_in_flight_is_no_trouble_one_out_for_an_rto_and_the_timer_slack_is() {
    let (r, want) = (rec(), settings().want);
    // Sent at IDLE (1 s) after the last ACK; a healthy peer answers within a round trip.
    // A LAN's RTO is the kernel's floor, 200 ms, and the timer may fire 100 ms late.
    assert_eq!(trouble(&probed(1_050), &r, &want), None);
    assert_eq!(trouble(&probed(1_299), &r, &want), None);
    assert_eq!(
        trouble(&probed(1_300), &r, &want),
        Some(Trouble::Unanswered)
    );
    // A slow path's RTO (600 ms): never more than half an interval, the next probe's time.
    let slow = |ms| TcpInfo {
        rto_us: 600_000,
        ..probed(ms)
    };
    assert_eq!(trouble(&slow(1_499), &r, &want), None);
    assert_eq!(trouble(&slow(1_500), &r, &want), Some(Trouble::Unanswered));
    // Without the socket's values (never armed), lifeline's own: 10 s, then the RTO (3 s
    // intervals: half of one is no bound here).
    let bare = Record {
        state: TcpState::Established,
        ..Record::default()
    };
    assert_eq!(trouble(&probed(10_299), &bare, &want), None);
    assert_eq!(
        trouble(&probed(10_300), &bare, &want),
        Some(Trouble::Unanswered)
    );
    // Data outstanding: an RTO that fired, not a slow ACK, is the trouble.
    let busy = TcpInfo {
        state: 1,
        unacked: 2,
        last_ack_recv_ms: 5_000,
        ..TcpInfo::default()
    };
    assert_eq!(trouble(&busy, &r, &want), None);
    let rto = TcpInfo {
        retransmits: 1,
        ..busy
    };
    assert_eq!(trouble(&rto, &r, &want), Some(Trouble::Retransmitting));
    assert_eq!(
        trouble(
            &TcpInfo {
                state: 1,
                ..TcpInfo::default()
            },
            &r,
            &want
        ),
        None
    );
}

#[test]
fn a_left_peer_whose_probe_went_unanswered_is_migrated_within_the_jitter() {
    let (mut j, r, m) = leaving();
    let s = Socket {
        member: Some(&m),
        ..sock(&r)
    };
    let t0 = Mono::from_secs(100);
    assert!(
        j.wants_info(&s, t0),
        "a left peer's socket is read on every visit"
    );
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(2_000)), t0);
    let due = t0 + jitter(7, EARLY_JITTER);
    if due > t0 {
        assert!(call.reason.is_none(), "not before its jitter");
        assert_eq!(call.wake, Some(due - t0));
        assert!(
            j.due(t0).any(|c| c == Cookie(7)),
            "visited when its moment comes"
        );
    }
    // The moment holds from the first look on; at it, the kill, with its evidence.
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(2_100)), due);
    let Some(Reason::Orphaned {
        endpoint,
        absent_for,
        trouble,
    }) = call.reason
    else {
        panic!("{call:?}");
    };
    assert_eq!(
        (endpoint.as_str(), absent_for),
        ("api:6443", Duration::ZERO)
    );
    assert_eq!(trouble, Some(Trouble::Unanswered));
    assert!(EARLY_JITTER <= Duration::from_millis(200));
}

#[test]
fn a_left_peer_that_still_answers_keeps_the_slow_migration() {
    let mut j = Judge::new(settings(), None);
    let r = rec();
    let t0 = Mono::from_secs(100);
    // Leaving and answering (a probe in flight, or none out): no kill, only a look when
    // its probe's answer would be overdue (IDLE + RTO + slack = 1.3 s after its last ACK).
    let leaving = member(LEAVING);
    let s = Socket {
        member: Some(&leaving),
        ..sock(&r)
    };
    for (info, overdue_ms) in [
        (probed(1_020), 280),
        (
            TcpInfo {
                state: 1,
                last_ack_recv_ms: 300,
                ..TcpInfo::default()
            },
            1_000,
        ),
    ] {
        let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&info), t0);
        assert!(call.reason.is_none(), "{call:?}");
        assert_eq!(call.wake, Some(Duration::from_millis(overdue_ms)));
    }
    // Data in flight is the retransmission rule's, not the probe's: no look for it here.
    let busy = TcpInfo {
        state: 1,
        unacked: 1,
        last_ack_recv_ms: 300,
        ..TcpInfo::default()
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&busy), t0);
    assert!(call.reason.is_none() && call.wake.is_none(), "{call:?}");
    // Orphaned and answering: its moment of the spread, a plain orphan then.
    let orphaned = member(Membership::Orphaned {
        absent_for: Duration::from_secs(40),
    });
    let s = Socket {
        member: Some(&orphaned),
        ..sock(&r)
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(1_020)), t0);
    let due = t0 + jitter(7, settings().spread);
    assert!(call.reason.is_none());
    // Its moment, unless its probe's answer is overdue first.
    assert_eq!(call.wake, Some((due - t0).min(Duration::from_millis(280))));
    let quiet = TcpInfo {
        state: 1,
        ..TcpInfo::default()
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet), due);
    assert!(
        matches!(call.reason, Some(Reason::Orphaned { trouble: None, .. })),
        "{call:?}"
    );
}

#[test]
fn trouble_with_the_peer_in_the_set_or_under_on_orphan_log_is_no_early_kill() {
    let r = rec();
    let t0 = Mono::from_secs(100);
    let in_set = member(Membership::InSet);
    let mut j = Judge::new(settings(), None);
    let s = Socket {
        member: Some(&in_set),
        ..sock(&r)
    };
    let call = j.endpoint_reason(
        &s,
        Verdict::Healthy,
        Some(&probed(5_000)),
        t0 + EARLY_JITTER,
    );
    assert!(
        call.reason.is_none(),
        "the evidence verdicts' business: {call:?}"
    );
    assert_eq!(
        call.probe.map(|p| p.why),
        Some("trouble on a watched socket")
    );
    let mut j = Judge::new(
        Settings {
            migrate: false,
            ..settings()
        },
        None,
    );
    let leaving = member(LEAVING);
    let s = Socket {
        member: Some(&leaving),
        ..sock(&r)
    };
    for at in [t0, t0 + EARLY_JITTER] {
        let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&probed(5_000)), at);
        assert!(
            call.reason.is_none(),
            "--on-orphan log never kills: {call:?}"
        );
    }
}

#[test]
fn trouble_asks_for_a_probe_begun_after_its_episode_began_not_after_its_last_ack() {
    // The socket last heard from its peer at 96 s; its trouble episode (the kernel's first
    // retransmission) began at 99 s. A probe begun at 97 s, for another socket's episode,
    // says nothing about the path since 99 s: it must not answer this ask, else the
    // kernel keeps this socket's linear timeouts off and its evidence comes at the
    // exponential schedule (the flow-only bench row, five clients per lab).
    let at = Mono::from_secs(100);
    let r = Record {
        trouble: Some(Mono::from_secs(99)),
        ..rec()
    };
    let in_set = member(Membership::InSet);
    let s = Socket {
        member: Some(&in_set),
        ..sock(&r)
    };
    let info = TcpInfo {
        state: 1,
        unacked: 1,
        retransmits: 1,
        last_ack_recv_ms: 4_000,
        ..TcpInfo::default()
    };
    let mut j = Judge::new(settings(), None);
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&info), at);
    let after = call.probe.and_then(|p| p.after).expect("a probe asked for");
    assert!(after > Mono::from_secs(99), "{after:?}");
    // Without an episode on (keepalive probes out), since its last sign of life.
    let quiet = rec();
    let s = Socket {
        member: Some(&in_set),
        ..sock(&quiet)
    };
    let silent = TcpInfo {
        last_data_recv_ms: 5_000,
        ..probed(5_000)
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&silent), at);
    assert_eq!(call.probe.and_then(|p| p.after), Some(Mono::from_secs(95)));
}
