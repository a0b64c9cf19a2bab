//! The judge's randomness is its seed (`Settings::seed`): with a fixed one every jittered
//! moment is known, so these tests assert exact times; over many seeds the rules hold
//! wherever a moment falls, the very start of its window included.

use std::time::Duration;

use super::{
    endpoint::{DEAD_PEER_JITTER, QUIET_RECHECK},
    *,
};

const SPREAD: Duration = Duration::from_mins(1);

fn orphaned() -> (String, Membership) {
    (
        "api:6443".into(),
        Membership::Orphaned {
            absent_for: Duration::from_secs(40),
        },
    )
}

fn info(unacked: u32) -> TcpInfo {
    TcpInfo {
        state: 1,
        unacked,
        ..TcpInfo::default()
    }
}

/// One orphan under `seed`: not before its moment (and woken exactly then), not while busy,
/// migrated once quiet.
fn migrates_at_its_moment(seed: Seed) {
    let mut j = Judge::new(
        Settings {
            seed,
            ..super::tests::settings()
        },
        None,
    );
    let rec = Record {
        state: TcpState::Established,
        ..Record::default()
    };
    let member = orphaned();
    let s = Socket {
        cookie: Cookie(7),
        rec: &rec,
        polled: false,
        member: Some(&member),
        followed: false,
        peer: None,
    };
    let t0 = Mono::from_secs(100);
    let due = t0 + seed.jitter(Cookie(7), SPREAD);
    if due > t0 {
        let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&info(0)), t0);
        assert!(call.reason.is_none(), "{seed:?}: before its moment");
        // Idle: looked at when its keepalive probe's answer would be overdue (IDLE +
        // INTERVAL/2 after its last ACK, `early::overdue_in`) if that comes first.
        let want = super::tests::settings().want;
        let overdue = super::early::overdue_in(&info(0), &rec, &want);
        assert!(overdue.is_some(), "idle, armed: a probe will go out");
        assert_eq!(
            call.wake,
            (due - t0).min(overdue.unwrap_or(Duration::MAX)).into(),
            "{seed:?}: woken at its moment"
        );
    }
    let call = j.endpoint_reason(&s, Verdict::Healthy, None, due);
    assert!(
        call.reason.is_none(),
        "{seed:?}: never without the kernel's view"
    );
    assert_eq!(call.wake, Some(QUIET_RECHECK), "{seed:?}");
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&info(2)), due);
    assert!(call.reason.is_none(), "{seed:?}: requests in flight");
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&info(0)), due);
    assert!(
        matches!(call.reason, Some(Reason::Orphaned { .. })),
        "{seed:?}: {call:?}"
    );
}

#[test]
fn an_orphan_migrates_at_its_moment_whatever_the_seed() {
    for seed in 0..20_000 {
        migrates_at_its_moment(Seed(seed));
    }
    // The case a random seed hit about once in 60,000 runs: the moment is the window's
    // first millisecond, so the migration is due at once.
    let at_once = (0..10_000_000u64)
        .map(Seed)
        .find(|s| s.jitter(Cookie(7), SPREAD).is_zero())
        .expect("some seed puts cookie 7 at the start of the window");
    migrates_at_its_moment(at_once);
}

#[test]
fn a_fixed_seed_gives_fixed_moments_and_two_nodes_differ() {
    let (a, b) = (Seed(1), Seed(2));
    for cookie in 0..1_000 {
        assert_eq!(
            a.jitter(Cookie(cookie), SPREAD),
            Seed(1).jitter(Cookie(cookie), SPREAD)
        );
        assert!(a.jitter(Cookie(cookie), DEAD_PEER_JITTER) < DEAD_PEER_JITTER);
    }
    // Two nodes (two seeds) migrating the same sockets: about 1 in 60,000 moments agree by
    // chance, so a fleet does not re-dial in lockstep.
    let same = (0..1_000)
        .filter(|&c| a.jitter(Cookie(c), SPREAD) == b.jitter(Cookie(c), SPREAD))
        .count();
    assert!(same < 10, "{same} of 1,000 moments agree");
    // One socket across 1,000 nodes: spread over the whole minute.
    let seconds: std::collections::HashSet<_> = (0..1_000)
        .map(|n| Seed(n).jitter(Cookie(7), SPREAD).as_secs())
        .collect();
    assert!(seconds.len() > 50, "{} distinct seconds", seconds.len());
}
