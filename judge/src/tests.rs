//! Every rule of the judge, without root, the kernel or a network: records and `tcp_info`
//! values are made up, the clock is passed in.

use std::time::Duration;

use lifeline_common::Keepalive;

use super::{endpoint::DEAD_PEER_JITTER, *};

pub(super) const S: u64 = 1_000_000_000;
/// The socket most tests judge.
pub(super) const C: Cookie = Cookie(7);

/// The moment `ns` nanoseconds after boot.
pub(super) fn at(ns: u64) -> Mono {
    Mono::from_nanos(ns)
}
/// The tests' fixed seed: every jittered moment below is known in advance.
pub(super) const SEED: Seed = Seed(1);

pub(super) fn jitter(cookie: u64, max: Duration) -> Duration {
    SEED.jitter(Cookie(cookie), max)
}

pub(super) fn settings() -> Settings {
    Settings {
        stall: crate::Stall::new(Duration::from_secs(10), 8),
        silent: Some(Silence {
            after: Duration::from_secs(16),
            probes: 2,
        }),
        want: Keepalive {
            idle_s: 10,
            intvl_s: 3,
            cnt: 3,
            user_timeout_ms: 0,
        },
        migrate: true,
        spread: Duration::from_mins(1),
        dry_run: false,
        max_kills_per_minute: 6,
        seed: SEED,
    }
}

/// A record that has retransmitted for `trouble_s` with no ACK progress for `last_ack_s`.
pub(super) fn stalled_rec(now_s: u64, trouble_s: u64) -> Record {
    Record {
        state: TcpState::Established,
        packets_out: 1,
        last_ack: Mono::from_secs(now_s - trouble_s - 1),
        trouble: Some(Mono::from_secs(now_s - trouble_s)),
        // Exponential backoff: the 5 RTOs the time rule needs by 10 s.
        rto_count: 5,
        peer: std::net::SocketAddr::from(([0, 0, 0, 0], 6443)),
        ..Record::default()
    }
}

pub(super) fn stalled_info() -> TcpInfo {
    TcpInfo {
        state: 1,
        unacked: 1,
        last_ack_recv_ms: 12_000,
        last_data_recv_ms: 12_000,
        retransmits: 5,
        ..TcpInfo::default()
    }
}

pub(super) fn sock(rec: &Record) -> Socket<'_> {
    Socket {
        cookie: C,
        rec,
        polled: false,
        member: None,
        followed: false,
        peer: None,
    }
}

#[test]
fn a_stall_is_killed_only_on_the_second_look_with_both_witnesses() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    assert!(j.wants_info(&s, at(100 * S)), "the record nominates it");
    let info = Read::Info(stalled_info());
    let (v, i) = j.verdict(&s, Some(&info), at(100 * S)).unwrap();
    assert_eq!(v, Verdict::Stalled);
    assert!(
        !j.confirmed(C, v, i.as_ref()),
        "first look: shown, not killed"
    );
    assert!(
        j.turn_looks(),
        "a new dead socket: the next look comes soon"
    );
    let (v, i) = j.verdict(&s, Some(&info), at(100 * S + S / 2)).unwrap();
    assert!(
        j.confirmed(C, v, i.as_ref()),
        "second look in a row: confirmed"
    );
}

#[test]
fn without_the_kernels_view_nothing_is_dead() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    for read in [Read::Unreadable, Read::NoInfo] {
        let (v, i) = j.verdict(&s, Some(&read), at(100 * S)).unwrap();
        assert_eq!(v, Verdict::Suspect);
        assert!(!j.confirmed(C, v, i.as_ref()));
    }
    assert!(
        j.verdict(&s, Some(&Read::Gone), at(100 * S)).is_none(),
        "gone: forgotten"
    );
    // The kernel disagrees (ACKs arrive): suspect, never stalled.
    let acking = TcpInfo {
        last_ack_recv_ms: 200,
        ..stalled_info()
    };
    let (v, _) = j
        .verdict(&s, Some(&Read::Info(acking)), at(100 * S))
        .unwrap();
    assert_eq!(v, Verdict::Suspect);
}

#[test]
fn a_confirmation_needs_consecutive_looks() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    let dead = Read::Info(stalled_info());
    j.verdict(&s, Some(&dead), at(100 * S));
    j.turn_looks();
    j.verdict(&s, Some(&Read::Unreadable), at(101 * S));
    j.turn_looks();
    let (v, i) = j.verdict(&s, Some(&dead), at(102 * S)).unwrap();
    assert!(
        !j.confirmed(C, v, i.as_ref()),
        "an unreadable look in between resets it"
    );
}

#[test]
fn jitter_stays_in_bounds_and_is_fixed_per_socket() {
    for cookie in 0..1_000 {
        let d = jitter(cookie, DEAD_PEER_JITTER);
        assert!(d < DEAD_PEER_JITTER);
        assert_eq!(d, jitter(cookie, DEAD_PEER_JITTER));
    }
    let spread: std::collections::HashSet<_> = (0..1_000)
        .map(|c| jitter(c, Duration::from_mins(1)).as_secs())
        .collect();
    assert!(
        spread.len() > 40,
        "spread over the window, not clumped: {}",
        spread.len()
    );
}

pub(super) fn kill(cookie: u64, reason: Reason) -> Kill {
    Kill {
        cookie: Cookie(cookie),
        rec: stalled_rec(100, 11),
        info: stalled_info(),
        reason,
        evidence: evidence(),
        path_epoch: 0,
        whose: unit_socket(),
    }
}

/// Evidence confirmed now, of a run that began after the socket's last sign of life.
pub(super) fn evidence() -> Evidence {
    let now = at(100 * S);
    Evidence::new(now, now, now).expect("a run at its life")
}

/// Whose a socket of `--restart-unit`'s own cgroup is.
pub(super) fn unit_socket() -> Whose {
    Whose {
        budget: Budget::Cgroup("/system.slice/kubelet.service".into()),
        unit: UnitOwned::Yes,
    }
}
