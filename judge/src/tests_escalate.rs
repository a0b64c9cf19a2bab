//! The escalation and the kill budgets as scoped to what they protect: per-target budgets,
//! restarts only for the unit's own sockets, one record per kill.

use std::time::Duration;

use super::{
    tests::{kill, settings},
    *,
};
use crate::ActionMode;

fn noisy(cookie: u64) -> Kill {
    Kill {
        whose: Whose {
            budget: Budget::Comm("noisy".into()),
            unit: UnitOwned::No,
        },
        ..kill(cookie, Reason::Dead(Verdict::Stalled))
    }
}

fn judge(mode: ActionMode, max_kills: u32) -> Judge {
    let settings = Settings {
        max_kills_per_minute: max_kills,
        ..settings()
    };
    Judge::new(
        settings,
        Some(Escalation::new(mode, Duration::from_secs(30))),
    )
}

fn healthy_since(peer: std::net::SocketAddr, age: Duration) -> Seen {
    Seen {
        peer,
        endpoint_socket: None,
        verdict: Verdict::Healthy,
        established_age: age,
    }
}

#[test]
fn a_noisy_client_spends_its_own_budget_not_the_units() {
    let mut j = judge(ActionMode::Kill, 2);
    let t0 = Mono::from_secs(100);
    assert_eq!(j.gate(&noisy(1), true, t0), Action::Kill);
    assert_eq!(j.gate(&noisy(2), true, t0), Action::Kill);
    assert_eq!(
        j.gate(&noisy(3), true, t0),
        Action::RateLimited,
        "the noisy client's own budget is spent"
    );
    let unit = kill(4, Reason::Dead(Verdict::Stalled));
    assert_eq!(
        j.gate(&unit, true, t0 + Duration::from_secs(1)),
        Action::Kill,
        "kubelet's socket is still killed at once"
    );
}

#[test]
fn only_the_units_own_sockets_can_restart_it() {
    let mut j = judge(ActionMode::Restart, 6);
    let t0 = Mono::from_secs(100);
    assert_eq!(
        j.gate(&noisy(1), true, t0),
        Action::Kill,
        "another process's stalled socket is killed, never a restart"
    );
    let unknown = Kill {
        whose: Whose::default(),
        ..kill(2, Reason::Dead(Verdict::Stalled))
    };
    assert_eq!(
        j.gate(&unknown, true, t0),
        Action::Kill,
        "not known to be the unit's: no restart"
    );
    let esc = j.escalation.as_mut().unwrap();
    assert!(esc.restart_instead(&noisy(1), t0).is_none());
    assert!(
        esc.after_outcome(&noisy(1), &Outcome::Failed("EPERM".into()), t0)
            .is_none(),
        "a failed kill of another process's socket asks for nothing"
    );
    assert!(
        esc.after_outcome(&noisy(5), &Outcome::Killed, t0).is_none() && !esc.waiting(),
        "its kill is not watched for a recovery"
    );
    let (due, _) = esc.after_sweep(&[], t0 + Duration::from_mins(5));
    assert!(due.is_empty(), "nothing escalates from it later either");
    assert!(esc.first_outside(&noisy(1)), "said once for its target");
    assert!(!esc.first_outside(&noisy(6)), "and only once");
    assert!(!esc.first_outside(&kill(7, Reason::Dead(Verdict::Stalled))));
}

#[test]
fn an_already_gone_socket_is_no_failed_kill() {
    let mut j = judge(ActionMode::Kill, 6);
    let t0 = Mono::from_secs(100);
    let k = kill(1, Reason::Dead(Verdict::Stalled));
    assert!(j.outcome(&k, &Outcome::Gone, t0).is_none());
    let esc = j.escalation.as_mut().unwrap();
    assert!(!esc.waiting());
    let (due, _) = esc.after_sweep(&[], t0 + Duration::from_mins(1));
    assert!(due.is_empty());
}

#[test]
fn no_restart_needed_is_never_followed_by_a_restart_of_the_same_kill() {
    let mut j = judge(ActionMode::Kill, 6);
    let t0 = Mono::from_secs(100);
    let k = kill(1, Reason::Dead(Verdict::Stalled));
    let peer = k.rec.peer;
    assert!(j.outcome(&k, &Outcome::Killed, t0).is_none());
    assert!(
        j.outcome(&k, &Outcome::Killed, t0).is_none(),
        "a second kill report of the same socket"
    );
    let esc = j.escalation.as_mut().unwrap();
    let (due, _) = esc.after_sweep(&[], t0 + Duration::from_secs(31));
    assert_eq!(due.len(), 1, "one request for one kill");
    let queued = due[0].ticket.clone();
    // The client re-dials while the request waits at the restarter (its connect test).
    let back = healthy_since(peer, Duration::from_secs(1));
    let (due, recovered) = esc.after_sweep(&[back], t0 + Duration::from_secs(32));
    assert!(due.is_empty());
    assert_eq!(recovered.len(), 1, "no restart needed");
    assert!(!queued.take(), "so the queued request cannot restart");
    assert!(!esc.waiting());

    // The other order: the restarter took it, then the healthy connection appears.
    let k = kill(2, Reason::Dead(Verdict::Stalled));
    j.outcome(&k, &Outcome::Killed, t0);
    let esc = j.escalation.as_mut().unwrap();
    let (due, _) = esc.after_sweep(&[], t0 + Duration::from_secs(31));
    assert!(due[0].ticket.take(), "the restarter goes ahead");
    let (_, recovered) = esc.after_sweep(&[back], t0 + Duration::from_secs(32));
    assert!(
        recovered.is_empty(),
        "no 'no restart needed' for a kill whose restart was taken"
    );
    assert!(!esc.waiting());
}
