//! The arming rule on hand-fed answers, a sweep a second and a clock passed in: a DNS spoof
//! of a minute arms nothing (nor one followed by an outage), an address held for `SETTLE`
//! arms, rotating subsets arm, the first answer and literals arm at once.

use std::{
    collections::BTreeSet,
    net::IpAddr,
    sync::{Arc, Mutex},
};

use super::*;
use crate::endpoint::EndpointSet;

const GRACE: Duration = Duration::from_secs(30);
const API: u8 = 2;
/// Another service of the node on the same port, which a spoofer adds to the answers.
const OTHER: u8 = 50;

fn ips(v: &[u8]) -> BTreeSet<IpAddr> {
    v.iter().map(|d| IpAddr::from([198, 51, 100, *d])).collect()
}

fn addr(d: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::from([198, 51, 100, d]), 443)
}

/// A DNS name's set, its first answer `API` at `t0`, and the arming state after it.
fn dns(t0: Instant) -> (Endpoints, Arc<Mutex<EndpointSet>>, ArmingRuns) {
    let set = Arc::new(Mutex::new(EndpointSet::new("api.example", 443)));
    let e = Endpoints::of(vec![Arc::clone(&set)]);
    set.lock().unwrap().update(ips(&[API]), t0);
    let mut a = ArmingRuns::default();
    assert_eq!(
        a.step(&e.arming_candidates(GRACE), t0).armed,
        BTreeSet::from([addr(API)]),
        "the first answer arms at once"
    );
    (e, set, a)
}

/// Sweeps every second from `from` to `to` (exclusive), answering `answer(t)` every 5 s
/// (None: the lookup failed); returns the first second `OTHER` was armed, if any.
fn run(
    (e, set, a): &mut (Endpoints, Arc<Mutex<EndpointSet>>, ArmingRuns),
    t0: Instant,
    (from, to): (u64, u64),
    answer: impl Fn(u64) -> Option<BTreeSet<IpAddr>>,
) -> Option<u64> {
    let mut first = None;
    for s in from..to {
        let now = t0 + Duration::from_secs(s);
        if s.is_multiple_of(5)
            && let Some(addrs) = answer(s)
        {
            set.lock().unwrap().update(addrs, now);
        }
        let got = a.step(&e.arming_candidates(GRACE), now);
        assert!(got.armed.contains(&addr(API)), "the API address at {s} s");
        if got.armed.contains(&addr(OTHER)) && first.is_none() {
            first = Some(s);
        }
    }
    first
}

#[test]
fn a_one_minute_spoof_arms_nothing() {
    let t0 = Instant::now();
    let mut state = dns(t0);
    let spoofed = |s: u64| {
        Some(if (10..70).contains(&s) {
            ips(&[API, OTHER])
        } else {
            ips(&[API])
        })
    };
    assert_eq!(run(&mut state, t0, (1, 60), spoofed), None);
    // What the watch armed before this rule: every address within the grace, at once.
    assert!(state.0.peers_within_grace(GRACE).contains(&addr(OTHER)));
    assert_eq!(run(&mut state, t0, (60, 400), spoofed), None);
}

#[test]
fn a_spoof_then_an_outage_arms_nothing() {
    let t0 = Instant::now();
    let mut state = dns(t0);
    // A minute of the spoofed answer, then every lookup fails: the set keeps the last answer
    // (failures prove nothing), so the address stays within the grace for good.
    let spoofed = |s: u64| (s < 70).then(|| ips(&[API, OTHER]));
    assert_eq!(run(&mut state, t0, (1, 600), spoofed), None);
    assert!(
        state.1.lock().unwrap().admits(addr(OTHER).ip(), GRACE),
        "still in the set"
    );
}

#[test]
fn an_address_the_answers_hold_for_settle_arms_then() {
    let t0 = Instant::now();
    let mut state = dns(t0);
    let joined = |s: u64| {
        Some(if s >= 10 {
            ips(&[API, OTHER])
        } else {
            ips(&[API])
        })
    };
    let armed = run(&mut state, t0, (1, 300), joined).expect("armed");
    assert!(
        (130..=136).contains(&armed),
        "armed at {armed} s, {SETTLE:?} after it joined at 10 s"
    );
}

#[test]
fn rotating_subsets_arm_and_a_long_absence_starts_over() {
    let t0 = Instant::now();
    let mut state = dns(t0);
    // Every other answer holds it (a 5 s absence each time, well within the grace).
    let rotating = |s: u64| {
        Some(if s.is_multiple_of(10) {
            ips(&[API, OTHER])
        } else {
            ips(&[API])
        })
    };
    let armed = run(&mut state, t0, (1, 300), rotating).expect("armed");
    assert!(armed <= 140, "armed at {armed} s");
    // Gone from the answers for longer than the grace: a new run when it comes back.
    let gone = |_| Some(ips(&[API]));
    run(&mut state, t0, (300, 400), gone);
    let back = |_| Some(ips(&[API, OTHER]));
    let again = run(&mut state, t0, (400, 600), back).expect("armed again");
    assert!((520..=526).contains(&again), "armed again at {again} s");
}

#[test]
fn literals_arm_at_once_and_settling_is_said_once() {
    let t0 = Instant::now();
    let set = Arc::new(Mutex::new(EndpointSet::proxied("nginx", 443)));
    let e = Endpoints::of(vec![Arc::clone(&set)]);
    set.lock().unwrap().update(ips(&[API]), t0);
    let mut a = ArmingRuns::default();
    a.step(&e.arming_candidates(GRACE), t0);
    // The proxy's reloaded list names one more server by address, and one by a name.
    let later = t0 + Duration::from_secs(5);
    {
        let mut s = set.lock().unwrap();
        s.literals(ips(&[3]));
        s.update(ips(&[API, 3, OTHER]), later);
    }
    let got = a.step(&e.arming_candidates(GRACE), later);
    assert_eq!(got.armed, BTreeSet::from([addr(API), addr(3)]));
    assert_eq!(got.settling, vec![addr(OTHER)]);
    let next = a.step(&e.arming_candidates(GRACE), later + Duration::from_secs(1));
    assert!(next.settling.is_empty(), "said once per run");
}
