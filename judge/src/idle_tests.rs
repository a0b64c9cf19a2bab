//! The idle rules: when an idle socket is due a look, and `lifeline status`'s keepalive column.

use super::*;

const S: u64 = 1_000_000_000;
const ONE: Cookie = Cookie(1);

fn at(ns: u64) -> Mono {
    Mono::from_nanos(ns)
}

fn armed(last_ack_s: u64) -> Record {
    let keepalive = Keepalive {
        idle_s: 10,
        intvl_s: 3,
        cnt: 3,
        user_timeout_ms: 0,
    };
    Record {
        state: crate::TcpState::Established,
        last_ack: Mono::from_secs(last_ack_s),
        arming: Arming::Armed,
        keepalive,
        ..Default::default()
    }
}

#[test]
fn looks_only_when_a_probe_can_be_out_then_when_silence_is_possible() {
    let want = Keepalive {
        idle_s: 10,
        intvl_s: 3,
        cnt: 3,
        user_timeout_ms: 0,
    };
    let rule = super::super::Silence {
        after: Duration::from_secs(16),
        probes: 2,
    };
    let mut one = None;
    let mut w = IdleWatch::new(Some(rule), want);
    assert!(
        !w.due(one, &armed(95), at(100 * S)),
        "idle 5 s: no probe can have gone out"
    );
    assert!(w.due(one, &armed(80), at(100 * S)), "idle 20 s");
    // Answered 4 s ago: cannot be silent for another 12 s.
    w.looked(
        ONE,
        &mut one,
        &TcpInfo {
            last_ack_recv_ms: 4_000,
            ..Default::default()
        },
        at(100 * S),
    );
    assert!(!w.due(one, &armed(80), at(111 * S)));
    assert_eq!(w.next_due(at(111 * S)), Some(Duration::from_secs(1)));
    assert!(w.due(one, &armed(80), at(112 * S)));
    let off = IdleWatch::new(None, want);
    assert!(!off.due(None, &armed(0), at(100 * S)), "keepalive off");
}

#[test]
fn on_the_schedule_a_new_record_is_due_once_idle_for_its_keepalive_time() {
    let rule = super::super::Silence {
        after: Duration::from_secs(16),
        probes: 2,
    };
    let mut one = None;
    let mut w = IdleWatch::new(Some(rule), armed(0).keepalive);
    w.recorded(ONE, &mut one, &armed(95));
    assert_eq!(w.due_now(at(104 * S)).count(), 0);
    assert_eq!(w.due_now(at(105 * S)).collect::<Vec<_>>(), [ONE]);
    w.looked(ONE, &mut one, &TcpInfo::default(), at(105 * S));
    w.recorded(ONE, &mut one, &armed(95));
    assert_eq!(
        w.due_now(at(120 * S)).count(),
        0,
        "a look's schedule stands"
    );
}

#[test]
fn with_news_only_unanswered_probes_schedule_a_look() {
    let rule = super::super::Silence {
        after: Duration::from_secs(16),
        probes: 2,
    };
    let mut one = None;
    let mut w = IdleWatch::new(Some(rule), armed(0).keepalive);
    w.notified = true;
    w.recorded(ONE, &mut one, &armed(0));
    assert!(
        !w.due(one, &armed(0), at(100 * S)),
        "idle for ever, no news"
    );
    assert_eq!(w.scheduled(), 0);
    w.look_by(ONE, &mut one, at(100 * S));
    assert!(w.due(one, &armed(0), at(100 * S)));
    let probing = TcpInfo {
        probes: 1,
        last_ack_recv_ms: 12_000,
        ..Default::default()
    };
    w.looked(ONE, &mut one, &probing, at(100 * S));
    assert_eq!(w.next_due(at(100 * S)), Some(Duration::from_secs(4)));
    w.looked(ONE, &mut one, &TcpInfo::default(), at(104 * S));
    assert_eq!(
        w.scheduled(),
        0,
        "answered: wait for the kernel's next news"
    );
}
