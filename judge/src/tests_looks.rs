//! When a nominated socket is looked at again: a recovered flow's stale trouble costs one
//! `tcp_info` read per stall timeout, a new episode is looked at once, and a socket with
//! nothing outstanding goes to the idle rules.

use std::time::Instant;

use lifeline_common::{Keepalive, SockState, keepalive::KA_ARMED};

use super::*;

const S: u64 = 1_000_000_000;

fn judge() -> Judge {
    Judge::new(super::tests::settings(), None)
}

/// A trouble episode from `trouble_s`, long ago, with the 5 RTOs the time rule needs; the
/// record has not changed since (no callback per ACK), so it reads as stalled from
/// `trouble_s + 10` on.
fn old_trouble(trouble_s: u64) -> SockState {
    SockState {
        state: 1,
        packets_out: 4,
        last_ack_ns: (trouble_s - 1) * S,
        trouble_ns: trouble_s * S,
        rto_count: 5,
        ka_result: KA_ARMED,
        keepalive: Keepalive {
            idle_s: 10,
            intvl_s: 3,
            cnt: 3,
            user_timeout_ms: 0,
        },
        ..SockState::default()
    }
}

fn sock(rec: &SockState) -> Socket<'_> {
    Socket {
        cookie: 9,
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
    let at = Instant::now();
    assert!(
        j.wants_info(&s, 100 * S, at),
        "the stale record nominates it"
    );
    // Busy and ACKed 1 s ago: healthy, and cannot be stalled for 9 s.
    let (v, _) = j
        .verdict(&s, Some(&info(4, 1_000)), 100 * S, Instant::now())
        .unwrap();
    assert_eq!(v, Verdict::Healthy);
    j.turn_looks();
    for t in [101, 105, 108] {
        assert!(!j.wants_info(&s, t * S, at), "{t} s: the look still holds");
        let (v, i) = j.verdict(&s, None, t * S, Instant::now()).unwrap();
        assert_eq!((v, i.is_none()), (Verdict::Healthy, true), "{t} s");
    }
    assert!(
        j.wants_info(&s, 109 * S, at),
        "9 s later: a stall is possible"
    );
}

#[test]
fn a_new_trouble_episode_is_looked_at_when_its_record_says_stalled() {
    let mut j = judge();
    let rec = old_trouble(50);
    j.verdict(&sock(&rec), Some(&info(4, 1_000)), 100 * S, Instant::now());
    // snd_una moved, then a retransmission at 101 s: a new episode, new `trouble_ns`.
    let fresh = SockState {
        trouble_ns: 101 * S,
        last_ack_ns: 101 * S,
        ..rec
    };
    let s = sock(&fresh);
    let (v, _) = j.verdict(&s, None, 105 * S, Instant::now()).unwrap();
    assert_eq!(v, Verdict::Suspect, "the new episode's record speaks");
    assert!(j.wants_info(&s, 111 * S, Instant::now()));
}

#[test]
fn stale_trouble_with_nothing_outstanding_follows_the_idle_rules() {
    let mut j = judge();
    let rec = old_trouble(50);
    let s = sock(&rec);
    let (v, _) = j
        .verdict(&s, Some(&info(0, 30_000)), 100 * S, Instant::now())
        .unwrap();
    assert_eq!(v, Verdict::Idle);
    j.turn_looks();
    // Idle 50 s by the record: due a keepalive look, and silent on two looks in a row.
    let at = Instant::now();
    assert!(j.wants_info(&s, 101 * S, at), "idle: due a keepalive look");
    let silent = Read::Info(TcpInfo {
        state: 1,
        probes: 3,
        last_ack_recv_ms: 31_000,
        ..TcpInfo::default()
    });
    let (v, i) = j
        .verdict(&s, Some(&silent), 101 * S, Instant::now())
        .unwrap();
    assert_eq!(v, Verdict::Silent);
    assert!(!j.confirmed(9, v, i.as_ref()), "first look");
    assert!(j.turn_looks());
    assert!(j.wants_info(&s, 101 * S + S / 2, at), "the confirming look");
    let (v, i) = j
        .verdict(&s, Some(&silent), 101 * S + S / 2, Instant::now())
        .unwrap();
    assert!(j.confirmed(9, v, i.as_ref()), "killed as silent");
}

#[test]
fn eight_rtos_in_a_row_are_a_stall_long_before_the_stall_timeout() {
    let mut j = judge();
    // Linear timeouts: the eighth RTO 2.4 s after the data left, the record told at each.
    let rec = SockState {
        rto_count: 8,
        ..old_trouble(98)
    };
    let s = sock(&rec);
    let now = 100 * S + 400_000_000;
    assert!(
        j.wants_info(&s, now, Instant::now()),
        "the record nominates it"
    );
    let eight = |rtos| {
        Read::Info(TcpInfo {
            state: 1,
            unacked: 1,
            last_ack_recv_ms: 2_500,
            retransmits: rtos,
            ..TcpInfo::default()
        })
    };
    let (v, i) = j.verdict(&s, Some(&eight(8)), now, Instant::now()).unwrap();
    assert_eq!(v, Verdict::Stalled);
    assert!(!j.confirmed(9, v, i.as_ref()), "first look");
    assert!(j.turn_looks(), "the confirming look comes soon");
    let (v, i) = j
        .verdict(&s, Some(&eight(8)), now + S / 2, Instant::now())
        .unwrap();
    assert!(j.confirmed(9, v, i.as_ref()), "confirmed 0.5 s later");
    // The kernel saw progress since (its count is back to 1): no stall, whatever the record.
    let mut j = judge();
    let (v, _) = j.verdict(&s, Some(&eight(1)), now, Instant::now()).unwrap();
    assert_eq!(v, Verdict::Suspect);
}
