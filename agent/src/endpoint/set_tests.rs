//! The set's rule on hand-fed answers and a clock passed in: rotating subsets, DNS
//! failures, literals, and addresses no answer held.

use super::*;

const GRACE: Duration = Duration::from_secs(30);

fn ips(v: &[u8]) -> BTreeSet<IpAddr> {
    v.iter().map(|d| IpAddr::from([198, 51, 100, *d])).collect()
}

#[test]
fn within_grace_keeps_a_leaving_address_until_the_grace_ends() {
    let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
    s.update(ips(&[2, 3]), t0);
    s.update(ips(&[3]), t0 + Duration::from_secs(1));
    s.update(ips(&[3]), t0 + Duration::from_secs(20));
    let got: BTreeSet<IpAddr> = s.within_grace(GRACE).collect();
    assert_eq!(got, ips(&[2, 3]));
    s.update(ips(&[3]), t0 + Duration::from_secs(40));
    let got: BTreeSet<IpAddr> = s.within_grace(GRACE).collect();
    assert_eq!(got, ips(&[3]));
}

#[test]
fn rotating_subsets_never_orphan_anyone() {
    let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
    let subsets: [&[u8]; 3] = [&[2, 3], &[3, 4], &[4, 2]];
    for i in 0..24u32 {
        s.update(
            ips(subsets[i as usize % 3]),
            t0 + Duration::from_secs(5) * i,
        );
    }
    for d in [2, 3, 4] {
        assert!(matches!(
            s.membership(IpAddr::from([198, 51, 100, d]), GRACE),
            Membership::InSet | Membership::Leaving { rotates: true, .. }
        ));
    }
}

#[test]
fn a_move_is_leaving_without_rotation_until_an_address_comes_back() {
    let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
    let old = IpAddr::from([198, 51, 100, 2]);
    s.update(ips(&[2]), t0);
    s.update(ips(&[2, 3]), t0 + Duration::from_secs(5));
    s.update(ips(&[3]), t0 + Duration::from_secs(6));
    assert!(
        matches!(
            s.membership(old, GRACE),
            Membership::Leaving { rotates: false, .. }
        ),
        "a load balancer that moved: no address ever came back"
    );
    // One comes back: the answers rotate, a leaving address may return too.
    s.update(ips(&[2, 3]), t0 + Duration::from_secs(7));
    s.update(ips(&[3]), t0 + Duration::from_secs(8));
    assert!(matches!(
        s.membership(old, GRACE),
        Membership::Leaving { rotates: true, .. }
    ));
    // An hour of answers without a return forgets it.
    s.update(ips(&[3, 4]), t0 + Duration::from_secs(8) + FORGET_AFTER);
    s.update(ips(&[4]), t0 + Duration::from_secs(9) + FORGET_AFTER);
    let three = IpAddr::from([198, 51, 100, 3]);
    assert!(matches!(
        s.membership(three, GRACE),
        Membership::Leaving { rotates: false, .. }
    ));
}

#[test]
fn gone_after_the_grace_of_successful_answers_only() {
    let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
    let old = IpAddr::from([198, 51, 100, 2]);
    s.update(ips(&[2]), t0);
    s.update(ips(&[3]), t0 + Duration::from_secs(5));
    assert!(matches!(
        s.membership(old, GRACE),
        Membership::Leaving { .. }
    ));
    // DNS down for a minute: failures do not move the clock.
    for i in 1..12u32 {
        s.fail("timeout".into(), t0 + Duration::from_secs(5) * (i + 1));
    }
    assert!(
        matches!(s.membership(old, GRACE), Membership::Leaving { .. }),
        "a DNS failure never orphans"
    );
    s.update(ips(&[3]), t0 + Duration::from_secs(40));
    assert_eq!(
        s.membership(old, GRACE),
        Membership::Orphaned {
            absent_for: Duration::from_secs(35)
        }
    );
    assert_eq!(s.failures, 11);
}

#[test]
fn literal_is_a_fixed_set_and_other_peers_are_never_held() {
    let s = EndpointSet::new("198.51.100.2", 6443);
    assert!(s.fixed);
    assert_eq!(
        s.membership(IpAddr::from([198, 51, 100, 2]), GRACE),
        Membership::InSet
    );
    assert_eq!(
        s.membership(IpAddr::from([198, 51, 100, 9]), GRACE),
        Membership::NeverHeld,
        "not this endpoint's"
    );
    assert!(!s.admits(IpAddr::from([198, 51, 100, 9]), GRACE));
    assert_eq!(
        EndpointSet::new("2001:db8::2", 443).name,
        "[2001:db8::2]:443"
    );
}

#[test]
fn an_address_no_answer_held_is_never_absent_nor_orphaned() {
    let (mut d, t0) = (EndpointSet::new("api", 6443), Instant::now());
    let outside = IpAddr::from([198, 51, 100, 9]);
    assert_eq!(d.membership(outside, GRACE), Membership::Unknown);
    for i in 0..10u32 {
        d.update(ips(&[3]), t0 + Duration::from_secs(30) * i);
        assert_eq!(
            d.membership(outside, GRACE),
            Membership::NeverHeld,
            "older than the agent or not, its port alone makes it no member"
        );
    }
    assert!(!d.admits(outside, GRACE));
    assert!(
        d.within_grace(GRACE).all(|ip| ip != outside),
        "looking never adds it"
    );
}

#[test]
fn admits_the_answer_and_the_grace_only() {
    let (mut s, t0) = (EndpointSet::new("api", 6443), Instant::now());
    let old = IpAddr::from([198, 51, 100, 2]);
    s.update(ips(&[2]), t0);
    assert!(s.admits(old, GRACE));
    s.update(ips(&[3]), t0 + Duration::from_secs(5));
    assert!(s.admits(old, GRACE), "left 0 s ago: a cached answer");
    s.update(ips(&[3]), t0 + Duration::from_secs(40));
    assert!(!s.admits(old, GRACE), "left past the grace");
    s.update(ips(&[3]), t0 + FORGET_AFTER + Duration::from_secs(10));
    assert_eq!(s.membership(old, GRACE), Membership::NeverHeld, "forgotten");
}

/// A kubeconfig saying 127.0.0.1:6443 with no proxy identified there: kubelet's socket to
/// the local proxy is no member (no orphan, dead-peer or probe rule on it), and a proxy's
/// upstream set is filled by its follower, a leaving upstream as a leaving DNS address.
#[test]
fn a_loopback_peer_is_never_a_member_and_a_proxied_set_moves_like_dns() {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let s = EndpointSet::new("127.0.0.1", 6443);
    assert_eq!(s.membership(lo, GRACE), Membership::NeverHeld);
    assert!(!s.admits(lo, GRACE));
    assert_eq!(
        s.membership("::1".parse().unwrap(), GRACE),
        Membership::NeverHeld
    );

    let (mut p, t0) = (EndpointSet::proxied("nginx", 6443), Instant::now());
    assert!(p.proxied && !p.fixed);
    assert_eq!(p.name, "nginx-upstreams:6443");
    assert_eq!(
        p.membership(IpAddr::from([198, 51, 100, 2]), GRACE),
        Membership::Unknown
    );
    p.update(ips(&[2, 3]), t0);
    p.update(ips(&[3]), t0 + Duration::from_secs(5));
    let two = IpAddr::from([198, 51, 100, 2]);
    assert!(matches!(
        p.membership(two, GRACE),
        Membership::Leaving { .. }
    ));
    p.update(ips(&[3]), t0 + Duration::from_secs(40));
    assert!(matches!(
        p.membership(two, GRACE),
        Membership::Orphaned { .. }
    ));
}
