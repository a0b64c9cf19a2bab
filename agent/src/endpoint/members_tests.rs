//! The membership rule, without root: the endpoint's answers are fed by hand, the clock is
//! passed in.

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    net::{IpAddr, SocketAddr},
    time::{Duration, Instant},
};

use super::{Facts, Members};
use crate::{
    endpoint::{Endpoints, Membership},
    judge::Cookie,
};

const GRACE: Duration = Duration::from_secs(30);

fn peer(d: u8) -> SocketAddr {
    SocketAddr::from(([198, 51, 100, d], 443))
}

fn answer(e: &Endpoints, hosts: &[u8], at: Instant) {
    let addrs: BTreeSet<IpAddr> = hosts.iter().map(|d| peer(*d).ip()).collect();
    e.sets()[0].lock().unwrap().update(addrs, at);
}

fn fail(e: &Endpoints, at: Instant) {
    e.sets()[0].lock().unwrap().fail("timeout".into(), at);
}

/// Every socket by peer, as the daemon's mirror lists them.
fn by_peer(sockets: &[(u64, SocketAddr)]) -> HashMap<SocketAddr, HashSet<Cookie>> {
    let mut out: HashMap<SocketAddr, HashSet<Cookie>> = HashMap::new();
    for (c, p) in sockets {
        out.entry(*p).or_default().insert(Cookie(*c));
    }
    out
}

/// The facts as a map (the daemon keeps them in its table of sockets).
impl Facts for HashMap<Cookie, usize> {
    fn endpoint_of(&self, cookie: Cookie) -> Option<usize> {
        self.get(&cookie).copied()
    }

    fn record(&mut self, cookie: Cookie, i: usize) -> bool {
        self.insert(cookie, i).is_none()
    }
}

fn api() -> Endpoints {
    Endpoints::new(&[("api.example".to_owned(), 443)])
}

#[test]
fn in_the_set_at_connect_is_a_member_and_stays_one() {
    let (e, mut m, t0) = (api(), Members::default(), Instant::now());
    let mut f: HashMap<Cookie, usize> = HashMap::new();
    answer(&e, &[2], t0);
    assert_eq!(m.see(&mut f, Cookie(1), peer(2), &e, GRACE, t0), Some(0));
    // The address leaves and is orphaned: still the endpoint's socket, now an orphan.
    answer(&e, &[3], t0 + Duration::from_secs(5));
    answer(&e, &[3], t0 + Duration::from_secs(40));
    assert_eq!(
        m.see(
            &mut f,
            Cookie(1),
            peer(2),
            &e,
            GRACE,
            t0 + Duration::from_secs(40)
        ),
        Some(0)
    );
    assert!(matches!(
        e.of_member(0, peer(2), GRACE),
        (_, Membership::Orphaned { .. })
    ));
    f.remove(&Cookie(1));
    assert_eq!(f.endpoint_of(Cookie(1)), None, "forgotten with the socket");
}

#[test]
fn a_leaving_address_is_admitted_an_orphaned_one_is_not() {
    let (e, mut m, t0) = (api(), Members::default(), Instant::now());
    let mut f: HashMap<Cookie, usize> = HashMap::new();
    answer(&e, &[2], t0);
    answer(&e, &[3], t0 + Duration::from_secs(5));
    let t = t0 + Duration::from_secs(6);
    assert_eq!(
        m.see(&mut f, Cookie(1), peer(2), &e, GRACE, t),
        Some(0),
        "a cached answer"
    );
    answer(&e, &[3], t0 + Duration::from_secs(40));
    let t = t0 + Duration::from_secs(41);
    assert_eq!(
        m.see(&mut f, Cookie(2), peer(2), &e, GRACE, t),
        None,
        "dialled after its address was orphaned: not the endpoint's"
    );
}

#[test]
fn an_address_that_joins_later_makes_its_sockets_members_from_then() {
    let (e, mut m, t0) = (api(), Members::default(), Instant::now());
    let mut f: HashMap<Cookie, usize> = HashMap::new();
    answer(&e, &[2], t0);
    let socks = by_peer(&[(1, peer(9))]);
    assert_eq!(m.see(&mut f, Cookie(1), peer(9), &e, GRACE, t0), None);
    m.sync(&mut f, &e, GRACE, socks.iter(), t0);
    assert_eq!(f.endpoint_of(Cookie(1)), None);
    answer(&e, &[2, 9], t0 + Duration::from_secs(5));
    assert!(m.take_joined().is_empty(), "nothing joined yet");
    m.sync(&mut f, &e, GRACE, socks.iter(), t0 + Duration::from_secs(5));
    assert_eq!(f.endpoint_of(Cookie(1)), Some(0), "joined while it lived");
    assert_eq!(
        m.take_joined(),
        [Cookie(1)],
        "looked at once more: its endpoint rules start"
    );
    assert!(m.take_joined().is_empty(), "once");
    // Also when the join is seen at a visit before the next sync.
    let (e2, mut m2) = (api(), Members::default());
    let mut f2: HashMap<Cookie, usize> = HashMap::new();
    answer(&e2, &[2], t0);
    assert_eq!(m2.see(&mut f2, Cookie(1), peer(9), &e2, GRACE, t0), None);
    answer(&e2, &[2, 9], t0 + Duration::from_secs(1));
    assert_eq!(
        m2.see(
            &mut f2,
            Cookie(1),
            peer(9),
            &e2,
            GRACE,
            t0 + Duration::from_secs(1)
        ),
        Some(0)
    );
}

#[test]
fn never_in_the_set_is_never_a_member_and_never_orphaned() {
    let (e, mut m, t0) = (api(), Members::default(), Instant::now());
    let mut f: HashMap<Cookie, usize> = HashMap::new();
    let socks = by_peer(&[(1, peer(9)), (2, peer(2))]);
    for i in 0..20u32 {
        let t = t0 + Duration::from_secs(10) * i;
        answer(&e, &[2], t);
        m.sync(&mut f, &e, GRACE, socks.iter(), t);
        assert_eq!(
            m.see(&mut f, Cookie(1), peer(9), &e, GRACE, t),
            None,
            "sweep {i}"
        );
        assert_eq!(m.see(&mut f, Cookie(2), peer(2), &e, GRACE, t), Some(0));
    }
    assert_eq!(
        e.standing(peer(9), GRACE),
        Some((0, Membership::NeverHeld)),
        "200 s of answers without it: never held, never absent, never orphaned"
    );
}

#[test]
fn a_socket_older_than_the_agent_to_an_outside_address_is_not_a_member() {
    let (e, mut m, t0) = (api(), Members::default(), Instant::now());
    let mut f: HashMap<Cookie, usize> = HashMap::new();
    // Adopted at start, before any answer: nothing can be said yet.
    assert_eq!(e.standing(peer(9), GRACE), Some((0, Membership::Unknown)));
    assert_eq!(m.see(&mut f, Cookie(1), peer(9), &e, GRACE, t0), None);
    assert_eq!(m.see(&mut f, Cookie(2), peer(2), &e, GRACE, t0), None);
    let socks = by_peer(&[(1, peer(9)), (2, peer(2))]);
    answer(&e, &[2], t0 + Duration::from_secs(1));
    m.sync(&mut f, &e, GRACE, socks.iter(), t0 + Duration::from_secs(1));
    assert_eq!(
        f.endpoint_of(Cookie(1)),
        None,
        "the first answer does not hold it"
    );
    assert_eq!(
        f.endpoint_of(Cookie(2)),
        Some(0),
        "the first answer holds it"
    );
    answer(&e, &[2], t0 + Duration::from_mins(5));
    assert_eq!(
        m.see(
            &mut f,
            Cookie(1),
            peer(9),
            &e,
            GRACE,
            t0 + Duration::from_mins(5)
        ),
        None
    );
}

#[test]
fn dns_failures_move_nothing() {
    let (e, mut m, t0) = (api(), Members::default(), Instant::now());
    let mut f: HashMap<Cookie, usize> = HashMap::new();
    answer(&e, &[2], t0);
    assert_eq!(m.see(&mut f, Cookie(1), peer(2), &e, GRACE, t0), Some(0));
    assert_eq!(m.see(&mut f, Cookie(2), peer(9), &e, GRACE, t0), None);
    let socks = by_peer(&[(1, peer(2)), (2, peer(9))]);
    for i in 1..30u32 {
        let t = t0 + Duration::from_secs(5) * i;
        fail(&e, t);
        m.sync(&mut f, &e, GRACE, socks.iter(), t);
        assert_eq!(m.see(&mut f, Cookie(1), peer(2), &e, GRACE, t), Some(0));
        assert_eq!(m.see(&mut f, Cookie(2), peer(9), &e, GRACE, t), None);
        assert_eq!(e.of_member(0, peer(2), GRACE).1, Membership::InSet);
    }
}

#[test]
fn another_port_is_never_the_endpoints() {
    let (e, mut m, t0) = (api(), Members::default(), Instant::now());
    let mut f: HashMap<Cookie, usize> = HashMap::new();
    answer(&e, &[2], t0);
    let other = SocketAddr::from(([198, 51, 100, 2], 6443));
    assert_eq!(m.see(&mut f, Cookie(1), other, &e, GRACE, t0), None);
    assert_eq!(e.standing(other, GRACE), None);
}

#[test]
fn a_never_held_peer_is_reported_once_not_per_sweep() {
    let (e, mut m, t0) = (api(), Members::default(), Instant::now());
    let mut f: HashMap<Cookie, usize> = HashMap::new();
    let socks = by_peer(&[(1, peer(9)), (2, peer(9))]);
    assert_eq!(m.see(&mut f, Cookie(1), peer(9), &e, GRACE, t0), None);
    assert!(m.reported.is_empty(), "no answer yet: nothing to say");
    answer(&e, &[2], t0 + Duration::from_secs(1));
    m.sync(&mut f, &e, GRACE, socks.iter(), t0 + Duration::from_secs(1));
    assert_eq!(
        m.reported.get(&peer(9)),
        Some(&(t0 + Duration::from_secs(1)))
    );
    for i in 2..50u32 {
        let t = t0 + Duration::from_secs(1) * i;
        answer(&e, if i % 2 == 0 { &[2, 3] } else { &[2] }, t);
        m.sync(&mut f, &e, GRACE, socks.iter(), t);
        m.see(&mut f, Cookie(2), peer(9), &e, GRACE, t);
    }
    assert_eq!(
        m.reported.get(&peer(9)),
        Some(&(t0 + Duration::from_secs(1))),
        "reported once, at the first answer"
    );
    assert_eq!(m.reported.len(), 1);
}
