//! When a nominated socket is looked at again: a recovered flow's stale trouble costs one
//! `tcp_info` read per stall timeout, a new episode is looked at once, and a socket with
//! nothing outstanding goes to the idle rules.

use lifeline_common::Keepalive;

use super::*;

const S: u64 = 1_000_000_000;
const NINE: Cookie = Cookie(9);

fn at(ns: u64) -> Mono {
    Mono::from_nanos(ns)
}

fn judge() -> Judge {
    Judge::new(super::tests::settings(), None)
}

/// A trouble episode from `trouble_s`, long ago, with the 5 RTOs the time rule needs; the
/// record has not changed since (no callback per ACK), so it reads as stalled from
/// `trouble_s + 10` on.
fn old_trouble(trouble_s: u64) -> Record {
    Record {
        state: TcpState::Established,
        packets_out: 4,
        last_ack: Mono::from_secs(trouble_s - 1),
        trouble: Some(Mono::from_secs(trouble_s)),
        rto_count: 5,
        arming: Arming::Armed,
        keepalive: Keepalive {
            idle_s: 10,
            intvl_s: 3,
            cnt: 3,
            user_timeout_ms: 0,
        },
        ..Record::default()
    }
}

fn sock(rec: &Record) -> Socket<'_> {
    Socket {
        cookie: NINE,
        rec,
        polled: false,
        member: None,
        followed: false,
        peer: None,
    }
}

fn info(unacked: u32, last_ack_ms: u32) -> Read {
    Read::Info(TcpInfo {
        state: 1,
        unacked,
        last_ack_recv_ms: last_ack_ms,
        ..TcpInfo::default()
    })
}

#[test]
fn a_recovered_flow_is_looked_at_again_only_when_a_stall_becomes_possible() {
    let mut j = judge();
    let rec = old_trouble(50);
    let s = sock(&rec);
    assert!(
        j.wants_info(&s, at(100 * S)),
        "the stale record nominates it"
    );
    // Busy and ACKed 1 s ago: healthy, and cannot be stalled for 9 s.
    let (v, _) = j.verdict(&s, Some(&info(4, 1_000)), at(100 * S)).unwrap();
    assert_eq!(v, Verdict::Healthy);
    j.turn_looks();
    for t in [101, 105, 108] {
        assert!(!j.wants_info(&s, at(t * S)), "{t} s: the look still holds");
        let (v, i) = j.verdict(&s, None, at(t * S)).unwrap();
        assert_eq!((v, i.is_none()), (Verdict::Healthy, true), "{t} s");
    }
    assert!(
        j.wants_info(&s, at(109 * S)),
        "9 s later: a stall is possible"
    );
}

#[test]
fn a_new_trouble_episode_is_looked_at_when_its_record_says_stalled() {
    let mut j = judge();
    let rec = old_trouble(50);
    j.verdict(&sock(&rec), Some(&info(4, 1_000)), at(100 * S));
    // snd_una moved, then a retransmission at 101 s: a new episode, new `trouble_ns`.
    let fresh = Record {
        trouble: Some(Mono::from_secs(101)),
        last_ack: Mono::from_secs(101),
        ..rec
    };
    let s = sock(&fresh);
    let (v, _) = j.verdict(&s, None, at(105 * S)).unwrap();
    assert_eq!(v, Verdict::Suspect, "the new episode's record speaks");
    assert!(j.wants_info(&s, at(111 * S)));
}

#[test]
fn stale_trouble_with_nothing_outstanding_follows_the_idle_rules() {
    let mut j = judge();
    let rec = old_trouble(50);
    let s = sock(&rec);
    let (v, _) = j.verdict(&s, Some(&info(0, 30_000)), at(100 * S)).unwrap();
    assert_eq!(v, Verdict::Idle);
    j.turn_looks();
    // Idle 50 s by the record: due a keepalive look, and silent on two looks in a row.
    assert!(j.wants_info(&s, at(101 * S)), "idle: due a keepalive look");
    let silent = Read::Info(TcpInfo {
        state: 1,
        probes: 3,
        last_ack_recv_ms: 31_000,
        ..TcpInfo::default()
    });
    let (v, i) = j.verdict(&s, Some(&silent), at(101 * S)).unwrap();
    assert_eq!(v, Verdict::Silent);
    assert!(!j.confirmed(NINE, v, i.as_ref()), "first look");
    assert!(j.turn_looks());
    assert!(j.wants_info(&s, at(101 * S + S / 2)), "the confirming look");
    let (v, i) = j.verdict(&s, Some(&silent), at(101 * S + S / 2)).unwrap();
    assert!(j.confirmed(NINE, v, i.as_ref()), "killed as silent");
}

#[test]
fn eight_rtos_in_a_row_are_a_stall_long_before_the_stall_timeout() {
    let mut j = judge();
    // Linear timeouts: the eighth RTO 2.4 s after the data left, the record told at each.
    let rec = Record {
        rto_count: 8,
        ..old_trouble(98)
    };
    let s = sock(&rec);
    let now = 100 * S + 400_000_000;
    assert!(j.wants_info(&s, at(now)), "the record nominates it");
    let eight = |rtos| {
        Read::Info(TcpInfo {
            state: 1,
            unacked: 1,
            last_ack_recv_ms: 2_500,
            retransmits: rtos,
            ..TcpInfo::default()
        })
    };
    let (v, i) = j.verdict(&s, Some(&eight(8)), at(now)).unwrap();
    assert_eq!(v, Verdict::Stalled);
    assert!(!j.confirmed(NINE, v, i.as_ref()), "first look");
    assert!(j.turn_looks(), "the confirming look comes soon");
    let (v, i) = j.verdict(&s, Some(&eight(8)), at(now + S / 2)).unwrap();
    assert!(j.confirmed(NINE, v, i.as_ref()), "confirmed 0.5 s later");
    // The kernel saw progress since (its count is back to 1): no stall, whatever the record.
    let mut j = judge();
    let (v, _) = j.verdict(&s, Some(&eight(1)), at(now)).unwrap();
    assert_eq!(v, Verdict::Suspect);
}

#[test]
fn a_busy_socket_passed_over_by_its_due_look_does_not_keep_the_sweeps_awake() {
    let mut j = judge();
    // Its probe went unanswered at 100 s: a look is due then.
    assert!(j.unanswered(NINE, 9, true, at(100 * S)));
    // By the look, data is out and was retransmitted once: an episode the record calls
    // suspect, so no idle look and no read.
    let rec = Record {
        last_ack: Mono::from_secs(100),
        trouble: Some(Mono::from_secs(100)),
        rto_count: 1,
        ..old_trouble(100)
    };
    let s = sock(&rec);
    let now = at(100 * S + S / 10);
    assert!(!j.wants_info(&s, now), "nothing asks for the kernel's view");
    let (v, _) = j.verdict(&s, None, now).unwrap();
    assert_eq!(v, Verdict::Suspect);
    // Before: the look stayed due, and every sweep woke the next 50 ms later.
    let wake = j.end_sweep(now).wake;
    assert!(
        wake.is_none_or(|w| w >= std::time::Duration::from_secs(1)),
        "{wake:?}"
    );
    assert_eq!(j.due(now).count(), 0, "nothing due");
}

#[test]
fn a_troubled_record_is_visited_without_news_only_while_time_can_make_it_stalled() {
    let j = judge();
    // One RTO, then the flow recovered (no callback per ACK): only its next RTO, which is
    // news, can nominate it.
    let one = Record {
        rto_count: 1,
        ..old_trouble(50)
    };
    assert!(!j.in_trouble(NINE, &one, at(100 * S)), "one RTO: news only");
    let mut j = judge();
    // The RTOs the time rule needs: the record turns stalled as time passes.
    let rec = old_trouble(50);
    assert!(j.in_trouble(NINE, &rec, at(100 * S)), "no answer holds yet");
    // A look found it busy and ACKed 1 s ago: not visited while that answer holds, and
    // visited again once a stall is possible.
    j.verdict(&sock(&rec), Some(&info(4, 1_000)), at(100 * S));
    assert!(
        !j.in_trouble(NINE, &rec, at(101 * S)),
        "the healthy answer holds"
    );
    assert!(j.in_trouble(NINE, &rec, at(109 * S)), "a stall is possible");
}
