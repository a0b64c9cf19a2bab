//! One unanswered run (`run.rs`) through the judge's surface: keepalive probes seen
//! unanswered, then data written and retransmitted, killed once the two together reach the
//! silent rule's count; a peer that answered in between is judged by the stall rule alone.

use std::time::Duration;

use super::{
    tests::{C, S, at, sock},
    tests_early::rec,
    *,
};

fn settings() -> Settings {
    Settings {
        silent: Some(Silence {
            after: Duration::from_millis(2_100),
            probes: 12,
        }),
        ..tests::settings()
    }
}

fn info(probes: u8, retransmits: u8, unacked: u32, quiet_ms: u32) -> Read {
    Read::Info(TcpInfo {
        state: 1,
        probes,
        retransmits,
        unacked,
        last_ack_recv_ms: quiet_ms,
        last_data_recv_ms: quiet_ms,
        ..TcpInfo::default()
    })
}

/// A judge that has looked at the idle socket once and seen `probes` unanswered.
fn after_idle_look(probes: u8) -> Judge {
    let mut j = Judge::new(settings(), None);
    j.set_unanswered_news(true);
    let idle = rec();
    j.recorded(C, &idle);
    assert!(
        j.unanswered(C, 10, false, at(100 * S)),
        "the threshold's news"
    );
    let s = sock(&idle);
    assert!(j.wants_info(&s, at(100 * S)), "news of unanswered probes");
    let look = j.look(&s, Some(&info(probes, 0, 0, 2_000)), at(100 * S));
    assert!(look.unwrap().kill.is_none());
    j.end_sweep(at(100 * S));
    j
}

/// The same socket with data written at 100.3 s and `rtos` RTOs of it fired.
fn writing(rtos: u32) -> Record {
    Record {
        trouble: Some(at(100 * S + 3 * S / 10)),
        packets_out: 1,
        rto_count: rtos,
        ..rec()
    }
}

/// The look a new episode after the probes earns: it reads the count the run continues from.
fn refresh(j: &mut Judge, probes: u8) {
    let t = at(100 * S + 6 * S / 10);
    let one = writing(1);
    assert!(
        j.wants_info(&sock(&one), t),
        "a new episode after the probes"
    );
    let look = j.look(&sock(&one), Some(&info(probes, 1, 1, 2_600)), t);
    assert!(look.unwrap().kill.is_none());
    j.end_sweep(t);
}

#[test]
fn probes_then_rtos_are_killed_as_one_run_on_two_looks() {
    let mut j = after_idle_look(1);
    refresh(&mut j, 9);
    let short = writing(1);
    assert!(
        !j.wants_info(&sock(&short), at(100 * S + 7 * S / 10)),
        "9 probes, the data, 1 RTO: short of the silent rule's 12"
    );
    let t1 = at(101 * S);
    let two = writing(2);
    assert!(j.wants_info(&sock(&two), t1), "9 + 1 + 2 = 12");
    let first = j.look(&sock(&two), Some(&info(9, 2, 1, 3_000)), t1);
    assert!(
        first.unwrap().kill.is_none(),
        "first look: shown, not killed"
    );
    assert!(j.turn_looks());
    let t2 = t1 + Duration::from_millis(500);
    let four = writing(4);
    assert!(j.wants_info(&sock(&four), t2), "the confirming look");
    let kill = j
        .look(&sock(&four), Some(&info(9, 4, 1, 3_500)), t2)
        .unwrap()
        .kill
        .expect("both witnesses, twice");
    assert_eq!(kill.reason, Reason::Dead(Verdict::Stalled));
    assert_eq!(
        kill.evidence.since(),
        kill.evidence.life(),
        "the run began with the first probe after the last sign of life"
    );
}

#[test]
fn a_peer_that_answered_leaves_the_stall_rule_its_own_count() {
    let mut j = after_idle_look(9);
    refresh(&mut j, 0);
    let four = writing(4);
    assert!(
        !j.wants_info(&sock(&four), at(101 * S)),
        "the look found the probes answered: no run to nominate"
    );
    let t = at(101 * S + 5 * S / 10);
    let eight = writing(8);
    assert!(
        j.wants_info(&sock(&eight), t),
        "no hold from the run's look: 8 RTOs nominate as ever"
    );
}

/// The first unanswered probe's news: no look (a lost answer is routine at scale), and no
/// look scheduled either; yet it is the run's witness, so data written after it earns the
/// refresh look that reads the count the run continues from.
#[test]
fn the_first_unanswered_probe_is_witnessed_without_a_look() {
    let mut j = Judge::new(settings(), None);
    j.set_unanswered_news(true);
    let idle = rec();
    j.recorded(C, &idle);
    let s = sock(&idle);
    let t = at(100 * S);
    // Never looked at before (a healthy idle socket is not, where the kernel reports).
    assert!(
        !j.unanswered(C, 1, false, t),
        "the first unanswered probe: no read"
    );
    assert!(
        !j.wants_info(&s, t + Duration::from_secs(3)),
        "nor a look later: the kernel reports again from the threshold on"
    );
    refresh(&mut j, 9);
    let two = writing(2);
    assert!(
        j.wants_info(&sock(&two), at(101 * S)),
        "the refresh look saw 9: 9 + 1 + 2 = 12"
    );
}

#[test]
fn the_first_is_looked_at_when_it_is_the_threshold_or_a_deferral_is_due() {
    let mut j = Judge::new(
        Settings {
            silent: Some(Silence {
                after: Duration::from_millis(2_100),
                probes: 3,
            }),
            ..tests::settings()
        },
        None,
    );
    j.set_unanswered_news(true);
    j.recorded(C, &rec());
    assert!(j.unanswered(C, 1, false, at(100 * S)), "1 is the threshold");
    let mut twelve = Judge::new(settings(), None);
    twelve.set_unanswered_news(true);
    twelve.recorded(C, &rec());
    assert!(
        twelve.unanswered(C, 1, true, at(100 * S)),
        "the caller's deferral due at 1"
    );
    assert!(twelve.wants_info(&sock(&rec()), at(100 * S)));
    assert_eq!(reported_from(3), 1);
    assert_eq!(reported_from(12), 10);
}
