//! Every rule of the judge, without root, the kernel or a network: records and `tcp_info`
//! values are made up, the clock is passed in.

use std::time::{Duration, Instant};

use lifeline_common::{Keepalive, SockState};

use super::{
    endpoint::{DEAD_PEER_JITTER, QUIET_RECHECK},
    *,
};
use crate::{ActionMode, Membership};

const S: u64 = 1_000_000_000;
/// The tests' fixed seed: every jittered moment below is known in advance.
pub(super) const SEED: Seed = Seed(1);

fn jitter(cookie: u64, max: Duration) -> Duration {
    SEED.jitter(cookie, max)
}

pub(super) fn settings() -> Settings {
    Settings {
        stall: Duration::from_secs(10),
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
fn stalled_rec(now_s: u64, trouble_s: u64) -> SockState {
    SockState {
        state: 1,
        packets_out: 1,
        last_ack_ns: (now_s - trouble_s - 1) * S,
        trouble_ns: (now_s - trouble_s) * S,
        peer_port: 6443,
        family: 2,
        ..SockState::default()
    }
}

fn stalled_info() -> TcpInfo {
    TcpInfo {
        state: 1,
        unacked: 1,
        last_ack_recv_ms: 12_000,
        retransmits: 4,
        ..TcpInfo::default()
    }
}

fn sock(rec: &SockState) -> Socket<'_> {
    Socket {
        cookie: 7,
        rec,
        polled: false,
        member: None,
        dead_since: None,
    }
}

#[test]
fn a_stall_is_killed_only_on_the_second_look_with_both_witnesses() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    assert!(
        j.wants_info(&s, 100 * S, Instant::now()),
        "the record nominates it"
    );
    let info = Read::Info(stalled_info());
    let (v, i) = j.verdict(&s, Some(&info), 100 * S).unwrap();
    assert_eq!(v, Verdict::Stalled);
    assert!(
        !j.confirmed(7, v, i.as_ref()),
        "first look: shown, not killed"
    );
    assert!(j.end_sweep(), "a new dead socket: the next look comes soon");
    let (v, i) = j.verdict(&s, Some(&info), 100 * S + S / 2).unwrap();
    assert!(
        j.confirmed(7, v, i.as_ref()),
        "second look in a row: confirmed"
    );
}

#[test]
fn without_the_kernels_view_nothing_is_dead() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    for read in [Read::Unreadable, Read::NoInfo] {
        let (v, i) = j.verdict(&s, Some(&read), 100 * S).unwrap();
        assert_eq!(v, Verdict::Suspect);
        assert!(!j.confirmed(7, v, i.as_ref()));
    }
    assert!(
        j.verdict(&s, Some(&Read::Gone), 100 * S).is_none(),
        "gone: forgotten"
    );
    // The kernel disagrees (ACKs arrive): suspect, never stalled.
    let acking = TcpInfo {
        last_ack_recv_ms: 200,
        ..stalled_info()
    };
    let (v, _) = j.verdict(&s, Some(&Read::Info(acking)), 100 * S).unwrap();
    assert_eq!(v, Verdict::Suspect);
}

#[test]
fn a_confirmation_needs_consecutive_looks() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    let dead = Read::Info(stalled_info());
    j.verdict(&s, Some(&dead), 100 * S);
    j.end_sweep();
    j.verdict(&s, Some(&Read::Unreadable), 101 * S);
    j.end_sweep();
    let (v, i) = j.verdict(&s, Some(&dead), 102 * S).unwrap();
    assert!(
        !j.confirmed(7, v, i.as_ref()),
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

fn orphan() -> (String, Membership) {
    (
        "api:6443".into(),
        Membership::Orphaned {
            absent_for: Duration::from_secs(40),
        },
    )
}

#[test]
fn an_orphan_migrates_after_its_jitter_and_only_at_a_quiet_moment() {
    let mut j = Judge::new(settings(), None);
    let rec = SockState {
        state: 1,
        last_ack_ns: 99 * S,
        ..SockState::default()
    };
    let member = orphan();
    let s = Socket {
        member: Some(&member),
        ..sock(&rec)
    };
    let t0 = Instant::now();
    let call = j.endpoint_reason(&s, Verdict::Healthy, None, t0);
    assert!(call.reason.is_none(), "not before its moment in the spread");
    let due = t0 + jitter(7, Duration::from_mins(1));
    assert_eq!(call.wake, Some(due - t0));
    assert_eq!(call.probe, Some("left the endpoint's DNS set"));
    let busy = TcpInfo {
        state: 1,
        unacked: 3,
        ..TcpInfo::default()
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&busy), due);
    assert!(call.reason.is_none(), "requests in flight: wait");
    assert_eq!(call.wake, Some(QUIET_RECHECK));
    let quiet = TcpInfo {
        state: 1,
        ..TcpInfo::default()
    };
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet), due);
    assert!(
        matches!(call.reason, Some(Reason::Orphaned { .. })),
        "{call:?}"
    );
}

#[test]
fn on_orphan_log_reports_once_and_never_kills() {
    let mut j = Judge::new(
        Settings {
            migrate: false,
            ..settings()
        },
        None,
    );
    let rec = SockState {
        state: 1,
        ..SockState::default()
    };
    let member = orphan();
    let s = Socket {
        member: Some(&member),
        ..sock(&rec)
    };
    let quiet = TcpInfo {
        state: 1,
        ..TcpInfo::default()
    };
    let first = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet), Instant::now());
    assert!(first.report_orphan.is_some() && first.reason.is_none());
    let again = j.endpoint_reason(&s, Verdict::Healthy, Some(&quiet), Instant::now());
    assert!(again.report_orphan.is_none() && again.reason.is_none());
}

#[test]
fn a_dead_peer_kills_after_its_jitter_with_the_kernels_view() {
    let mut j = Judge::new(settings(), None);
    let rec = SockState {
        state: 1,
        ..SockState::default()
    };
    let t0 = Instant::now();
    let member = (
        "api:6443".to_owned(),
        Membership::Leaving {
            absent_for: Duration::ZERO,
        },
    );
    let s = Socket {
        dead_since: Some(t0),
        member: Some(&member),
        ..sock(&rec)
    };
    let due = t0 + jitter(7, DEAD_PEER_JITTER);
    if due > t0 {
        let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&TcpInfo::default()), t0);
        assert!(call.reason.is_none());
        assert_eq!(call.wake, Some(due - t0));
    }
    assert!(
        j.endpoint_reason(&s, Verdict::Healthy, None, due)
            .reason
            .is_none(),
        "unread: no kill"
    );
    let call = j.endpoint_reason(&s, Verdict::Healthy, Some(&TcpInfo::default()), due);
    assert!(matches!(call.reason, Some(Reason::DeadPeer { .. })));
    assert!(
        j.wants_info(&s, 0, due),
        "the kernel's view is read once due"
    );
}

pub(super) fn kill(cookie: u64, reason: Reason) -> Kill {
    Kill {
        cookie,
        now_ns: 100 * S,
        rec: stalled_rec(100, 11),
        info: stalled_info(),
        reason,
        whose: unit_socket(),
    }
}

/// Whose a socket of `--restart-unit`'s own cgroup is.
pub(super) fn unit_socket() -> Whose {
    Whose {
        budget: Budget::Cgroup("/system.slice/kubelet.service".into()),
        unit: UnitOwned::Yes,
    }
}

#[test]
fn kills_are_rate_limited_per_sliding_minute_and_failures_back_off() {
    let mut j = Judge::new(
        Settings {
            max_kills_per_minute: 2,
            ..settings()
        },
        None,
    );
    let t0 = Instant::now();
    let dead = Reason::Dead(Verdict::Stalled);
    assert_eq!(j.gate(&kill(1, dead.clone()), true, t0), Action::Kill);
    assert_eq!(j.gate(&kill(2, dead.clone()), true, t0), Action::Kill);
    assert_eq!(
        j.gate(&kill(3, dead.clone()), true, t0),
        Action::RateLimited
    );
    assert_eq!(
        j.gate(&kill(3, dead.clone()), true, t0 + Duration::from_secs(2)),
        Action::Quiet,
        "backing off"
    );
    assert_eq!(
        j.gate(&kill(3, dead.clone()), true, t0 + Duration::from_secs(61)),
        Action::Kill,
        "aged out"
    );
    j.outcome(&kill(4, dead.clone()), &Outcome::Failed("EPERM".into()), t0);
    assert_eq!(
        j.gate(&kill(4, dead.clone()), true, t0 + Duration::from_secs(4)),
        Action::Quiet
    );
    j.outcome(&kill(1, dead), &Outcome::Killed, t0);
    assert_eq!(j.kills(), 1);
}

#[test]
fn no_healthy_endpoint_holds_and_dry_run_only_reports() {
    let mut j = Judge::new(settings(), None);
    let t0 = Instant::now();
    assert_eq!(
        j.gate(&kill(1, Reason::Dead(Verdict::Silent)), false, t0),
        Action::Hold
    );
    let mut dry = Judge::new(
        Settings {
            dry_run: true,
            ..settings()
        },
        None,
    );
    assert_eq!(
        dry.gate(&kill(1, Reason::Dead(Verdict::Stalled)), true, t0),
        Action::DryRun
    );
}

#[test]
fn action_restart_restarts_failures_with_their_real_verdict_but_migrates_orphans() {
    let esc = Escalation::new(ActionMode::Restart, Duration::from_secs(30));
    let mut j = Judge::new(settings(), Some(esc));
    let t0 = Instant::now();
    let silent = kill(1, Reason::Dead(Verdict::Silent));
    assert_eq!(j.gate(&silent, true, t0), Action::Restart);
    let req = j
        .escalation
        .as_mut()
        .unwrap()
        .restart_instead(&silent, t0)
        .unwrap();
    assert_eq!(
        (req.reason.label(), req.verdict),
        ("action-restart", "silent")
    );
    assert!(
        j.escalation
            .as_mut()
            .unwrap()
            .restart_instead(&silent, t0)
            .is_none(),
        "once per socket"
    );
    let dead_peer = kill(2, Reason::DeadPeer { endpoint: None });
    assert_eq!(j.gate(&dead_peer, true, t0), Action::Restart);
    let migration = kill(
        3,
        Reason::Orphaned {
            endpoint: "api:6443".into(),
            absent_for: Duration::from_secs(40),
        },
    );
    assert_eq!(
        j.gate(&migration, true, t0),
        Action::Kill,
        "a migration is a kill, never a restart"
    );
}

#[test]
fn a_kill_without_recovery_escalates_and_a_failed_kill_at_once() {
    let esc = Escalation::new(ActionMode::Kill, Duration::from_secs(30));
    let mut j = Judge::new(settings(), Some(esc));
    let t0 = Instant::now();
    let stalled = kill(1, Reason::Dead(Verdict::Stalled));
    assert!(j.outcome(&stalled, &Outcome::Killed, t0).is_none());
    let peer = stalled.rec.peer();
    let esc = j.escalation.as_mut().unwrap();
    let old = Seen {
        peer,
        endpoint_socket: None,
        verdict: Verdict::Healthy,
        established_age: Duration::from_mins(5),
    };
    let (due, back) = esc.after_sweep(&[old], t0 + Duration::from_secs(10));
    assert!(
        due.is_empty() && back.is_empty(),
        "a connection older than the kill is no recovery"
    );
    let (due, _) = esc.after_sweep(&[old], t0 + Duration::from_secs(31));
    assert_eq!(due.len(), 1);
    assert_eq!(
        (due[0].reason.label(), due[0].verdict),
        ("no-recovery", "unrecovered")
    );
    assert!(due[0].ticket.take(), "the restarter takes it");

    let redialed = kill(2, Reason::Dead(Verdict::Stalled));
    j.outcome(&redialed, &Outcome::Killed, t0);
    let fresh = Seen {
        peer,
        endpoint_socket: None,
        verdict: Verdict::Healthy,
        established_age: Duration::from_secs(1),
    };
    let esc = j.escalation.as_mut().unwrap();
    let (due, back) = esc.after_sweep(&[fresh], t0 + Duration::from_secs(5));
    assert!(
        due.is_empty() && back.len() == 1,
        "a re-dialed healthy connection ends the watch"
    );

    let failed = j.outcome(
        &kill(3, Reason::Dead(Verdict::Stalled)),
        &Outcome::Failed("EOPNOTSUPP".into()),
        t0,
    );
    assert_eq!(failed.map(|r| r.reason.label()), Some("kill-failed"));
    let migrated = kill(
        4,
        Reason::Orphaned {
            endpoint: "a".into(),
            absent_for: Duration::ZERO,
        },
    );
    j.outcome(&migrated, &Outcome::Killed, t0);
    let (due, _) = j
        .escalation
        .as_mut()
        .unwrap()
        .after_sweep(&[], t0 + Duration::from_mins(2));
    assert_eq!(
        due.len(),
        0,
        "a migration is not watched for recovery: only kill 1 was, and it fired already"
    );
}
