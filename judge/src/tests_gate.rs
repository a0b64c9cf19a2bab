//! From a confirmed kill to an action: the rate limit, the backoff, the guard's hold, dry
//! run, `--action restart`, and the escalation after a kill.

use std::time::Duration;

use super::{
    tests::{kill, settings},
    *,
};

#[test]
fn kills_are_rate_limited_per_sliding_minute_and_failures_back_off() {
    let mut j = Judge::new(
        Settings {
            max_kills_per_minute: 2,
            ..settings()
        },
        None,
    );
    let t0 = Mono::from_secs(100);
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
    let t0 = Mono::from_secs(100);
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
    let t0 = Mono::from_secs(100);
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
    let dead_peer = kill(
        2,
        Reason::DeadPeer {
            endpoint: None,
            probe_started: t0,
        },
    );
    assert_eq!(j.gate(&dead_peer, true, t0), Action::Restart);
    let migration = kill(
        3,
        Reason::Orphaned {
            endpoint: "api:6443".into(),
            absent_for: Duration::from_secs(40),
            trouble: None,
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
    let t0 = Mono::from_secs(100);
    let stalled = kill(1, Reason::Dead(Verdict::Stalled));
    assert!(j.outcome(&stalled, &Outcome::Killed, t0).is_none());
    let peer = stalled.rec.peer;
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
            trouble: None,
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
