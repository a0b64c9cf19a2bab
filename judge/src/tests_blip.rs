//! A blip is not a death: evidence newer than life, a peer probe's finding only for sockets
//! silent since before it began, and every pending verdict earned again after the path to
//! the endpoint came back.

use std::time::Duration;

use super::{
    tests::{C, settings, sock, stalled_info, stalled_rec},
    *,
};

const MS: Duration = Duration::from_millis(1);

/// `stalled_rec(100, 11)`'s kernel view at `now_s`: its last ACK at 88 s, `retransmits` RTOs.
fn stalled_at(now_s: u64, retransmits: u8) -> TcpInfo {
    let quiet = u32::try_from((now_s - 88) * 1_000).unwrap();
    TcpInfo {
        retransmits,
        last_ack_recv_ms: quiet,
        last_data_recv_ms: quiet,
        ..stalled_info()
    }
}

/// Two looks `CONFIRM_AFTER` apart; the kill the second one wants, if any.
fn two_looks(j: &mut Judge, s: &Socket<'_>, info: TcpInfo, now_s: u64, at: Mono) -> Option<Kill> {
    assert_eq!(at, Mono::from_secs(now_s), "one clock");
    let read = Read::Info(info);
    let first = j.look(s, Some(&read), at).expect("present");
    assert!(first.kill.is_none(), "never on the first look");
    j.end_sweep(at);
    let half = CONFIRM_AFTER;
    let second = j.look(s, Some(&read), at + half);
    j.end_sweep(at + half);
    second.expect("present").kill
}

#[test]
fn a_stall_across_the_paths_return_needs_two_fresh_timeouts_and_a_recovery_is_left_alone() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    let at = Mono::from_secs(100);
    // Stalled, and the path found down: the first look is taken, then the path comes back.
    j.look(&s, Some(&Read::Info(stalled_info())), at);
    j.end_sweep(at);
    j.path_down(at.checked_sub(Duration::from_secs(3)).unwrap());
    assert!(j.path_back(at + 100 * MS), "a return");
    assert!(
        two_looks(
            &mut j,
            &s,
            stalled_at(101, 5),
            101,
            at + Duration::from_secs(1)
        )
        .is_none(),
        "the evidence before the return is not enough"
    );
    assert!(j.awaits_fresh(C));
    assert!(
        two_looks(
            &mut j,
            &s,
            stalled_at(102, 6),
            102,
            at + Duration::from_secs(2)
        )
        .is_none(),
        "one fresh timeout: not yet"
    );
    let k = two_looks(
        &mut j,
        &s,
        stalled_at(104, 7),
        104,
        at + Duration::from_secs(4),
    )
    .expect("two fresh timeouts unanswered: dead");
    assert_eq!(k.reason, Reason::Dead(Verdict::Stalled));
    // The same socket recovered instead: an ACK moved snd_una, the kernel zeroed the count.
    let mut j = Judge::new(settings(), None);
    j.path_down(at);
    j.path_back(at + 100 * MS);
    let healed = TcpInfo {
        retransmits: 0,
        last_ack_recv_ms: 50,
        last_data_recv_ms: 50,
        ..stalled_info()
    };
    assert!(two_looks(&mut j, &s, healed, 101, at + Duration::from_secs(1)).is_none());
    assert!(!j.awaits_fresh(C), "heard after the return: ordinary rules");
}

#[test]
fn a_return_forgets_the_first_look_so_two_fresh_looks_are_needed() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    let at = Mono::from_secs(100);
    let read = Read::Info(stalled_at(100, 5));
    assert!(j.look(&s, Some(&read), at).unwrap().kill.is_none());
    j.end_sweep(at);
    j.path_down(at);
    assert!(j.path_back(at + 200 * MS));
    // The socket heard nothing (its life predates the return) but its count grew by two.
    let more = Read::Info(stalled_at(100, 9));
    let look = j.look(&s, Some(&more), at + 500 * MS).unwrap();
    assert!(
        look.kill.is_none(),
        "the look before the return is forgotten"
    );
}

#[test]
fn a_dead_peer_covers_only_sockets_silent_since_before_its_probe_began() {
    let mut j = Judge::new(settings(), None);
    let rec = Record {
        state: TcpState::Established,
        ..Record::default()
    };
    let member = ("api:6443".to_owned(), Membership::InSet);
    let at = Mono::from_secs(100);
    let dead = DeadPeer {
        probe_started: at.checked_sub(Duration::from_secs(3)).unwrap(),
        found: at.checked_sub(Duration::from_secs(2)).unwrap(),
    };
    let s = Socket {
        peer: Some(PeerProbe::Dead(dead)),
        member: Some(&member),
        ..sock(&rec)
    };
    let heard = |ms| TcpInfo {
        state: 1,
        last_ack_recv_ms: ms,
        last_data_recv_ms: 60_000,
        ..TcpInfo::default()
    };
    // Recovered after the blip: its last ACK 24 ms old (the case that killed healthy
    // connections), and a re-dial established after the probe: neither is covered.
    for ms in [24, 228, 2_900] {
        let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&heard(ms)), at);
        assert!(call.reason.is_none(), "heard {ms} ms ago: {call:?}");
    }
    let call = j.endpoint_reason(&s, Verdict::Suspect, Some(&heard(3_100)), at);
    assert!(
        matches!(call.reason, Some(Reason::DeadPeer { probe_started, .. }) if probe_started == dead.probe_started),
        "silent since before the probe: {call:?}"
    );
}

#[test]
fn a_stall_whose_peer_spoke_after_the_episode_began_is_judged_afresh() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    let at = Mono::from_secs(100);
    // Data arrived 3 s ago, after the episode's first retransmission 11 s ago.
    let spoke = TcpInfo {
        last_data_recv_ms: 3_000,
        ..stalled_at(100, 5)
    };
    assert!(two_looks(&mut j, &s, spoke, 100, at).is_none());
    let mut j = Judge::new(settings(), None);
    let k = two_looks(
        &mut j,
        &s,
        stalled_at(102, 5),
        102,
        at + Duration::from_secs(2),
    )
    .expect("nothing from the peer since before the episode");
    assert!(k.evidence.since() >= k.evidence.life());
    // The run began at the episode's first retransmission, 89 s on the sweep's clock; the
    // kill is the second look's.
    assert_eq!(
        k.evidence.age(k.evidence.at()),
        Duration::from_secs(13) + CONFIRM_AFTER
    );
}

#[test]
fn an_endpoint_sockets_death_waits_for_a_probe_that_shows_the_path_working() {
    let rec = stalled_rec(100, 11);
    let member = ("api:6443".to_owned(), Membership::InSet);
    let at = Mono::from_secs(100);
    // Its last sign of life as the second look reads it: 12 s before it.
    let life = (at + CONFIRM_AFTER)
        .checked_sub(Duration::from_secs(12))
        .unwrap();
    let with = |peer| Socket {
        member: Some(&member),
        peer,
        ..sock(&rec)
    };
    let after = |ms| life + Duration::from_millis(ms);
    let cases = [
        (None, false, "no probe yet: one is asked for"),
        (
            Some(PeerProbe::Running {
                started: after(100),
            }),
            false,
            "running",
        ),
        (
            Some(PeerProbe::PathWorks {
                started: after(100),
            }),
            true,
            "the peer's tries are out, another address accepted: the path works",
        ),
        (
            Some(PeerProbe::PathWorks {
                started: life.checked_sub(Duration::from_secs(1)).unwrap(),
            }),
            false,
            "the path worked before the silence began: stale",
        ),
        (
            Some(PeerProbe::PathDown {
                started: after(100),
            }),
            true,
            "the path is down: on to the guard, which holds it (a return drops it)",
        ),
        (
            Some(PeerProbe::Alive {
                started: life.checked_sub(Duration::from_secs(1)).unwrap(),
            }),
            false,
            "alive before the silence began: stale",
        ),
        (
            Some(PeerProbe::Alive {
                started: after(100),
            }),
            true,
            "the peer answers, the flow does not",
        ),
        (
            Some(PeerProbe::Dead(DeadPeer {
                probe_started: after(100),
                found: after(1_600),
            })),
            true,
            "the peer is dead and another address answers",
        ),
    ];
    for (peer, kills, what) in cases {
        let mut j = Judge::new(settings(), None);
        let s = with(peer);
        let read = Read::Info(stalled_at(100, 5));
        j.look(&s, Some(&read), at);
        j.end_sweep(at);
        let second = j
            .look(
                &s,
                Some(&Read::Info(stalled_at(100, 5))),
                at + CONFIRM_AFTER,
            )
            .unwrap();
        assert_eq!(second.kill.is_some(), kills, "{what}: {second:?}");
        if peer.is_none() || matches!(peer, Some(PeerProbe::Alive { .. })) && !kills {
            let ask = second.probe.expect("a probe asked for");
            assert!(
                ask.after.is_some_and(|t| t + SLACK >= life),
                "{what}: {ask:?}"
            );
        }
    }
}

#[test]
fn a_kill_decided_before_the_paths_return_is_not_current() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    let at = Mono::from_secs(100);
    let k = two_looks(&mut j, &s, stalled_at(100, 5), 100, at).expect("a kill");
    assert!(j.current(&k));
    j.path_down(at);
    assert!(j.path_back(at + Duration::from_secs(1)));
    assert!(!j.current(&k), "decided before the return");
}
