//! The judge's surface as the loop uses it: `look` after `wants_info`, `decide` and `outcome`
//! per kill, `end_sweep` once per sweep; each answer typed, nothing read from its state.

use std::time::Duration;

use super::{
    tests::{C, S, at, kill, settings, sock, stalled_info, stalled_rec},
    *,
};

fn escalating(mode: ActionMode) -> Judge {
    Judge::new(
        settings(),
        Some(Escalation::new(mode, Duration::from_secs(30))),
    )
}

/// A healthy socket to the killed socket's port, established `age_s` before `now_s`.
fn fresh_rec(now_s: u64, age_s: u64) -> Record {
    Record {
        packets_out: 0,
        trouble: None,
        last_ack: Mono::from_secs(now_s),
        established: Mono::from_secs(now_s - age_s),
        ..stalled_rec(now_s, 0)
    }
}

#[test]
fn a_look_answers_the_kill_on_the_confirming_look_and_keeps_the_counts() {
    let mut j = Judge::new(settings(), None);
    let rec = stalled_rec(100, 11);
    let s = sock(&rec);
    let info = Read::Info(stalled_info());
    let first = j.look(&s, Some(&info), at(100 * S)).unwrap();
    assert!(first.kill.is_none(), "first look: shown, not killed");
    let end = j.end_sweep(at(100 * S));
    assert_eq!(
        end.wake,
        Some(CONFIRM_AFTER),
        "the confirming look comes soon"
    );
    let second = j.look(&s, Some(&info), at(100 * S + S / 2)).unwrap();
    let k = second.kill.expect("second look in a row: a kill");
    assert_eq!((k.cookie, k.reason), (C, Reason::Dead(Verdict::Stalled)));
    assert_eq!(
        k.whose,
        Whose::default(),
        "whose it is: the loop's to find out"
    );
    let stalled: Vec<_> = j.counts().filter(|(_, n)| *n > 0).collect();
    assert_eq!(stalled, [(Verdict::Stalled, 1)], "one socket, counted once");
    assert!(j.look(&s, Some(&Read::Gone), at(101 * S)).is_none(), "gone");
    j.forget(C);
    assert!(j.counts().all(|(_, n)| n == 0));
}

#[test]
fn decide_restarts_the_units_socket_once_and_names_an_outsider_once() {
    let mut j = escalating(ActionMode::Restart);
    let t0 = Mono::from_secs(100);
    let unit = kill(1, Reason::Dead(Verdict::Stalled));
    let d = j.decide(&unit, true, t0);
    assert_eq!(d.action, Action::Restart);
    assert_eq!(d.restart.map(|r| r.verdict), Some("stalled"));
    assert!(!d.first_outside);
    let again = j.decide(&unit, true, t0);
    assert!(
        again.restart.is_none(),
        "a stall that persists is asked about once"
    );
    let outsider = Kill {
        whose: Whose {
            budget: Budget::Comm("noisy".into()),
            unit: UnitOwned::No,
        },
        ..kill(2, Reason::Dead(Verdict::Stalled))
    };
    let d = j.decide(&outsider, true, t0);
    assert_eq!((d.action, d.first_outside), (Action::Kill, true));
    assert!(
        !j.decide(&outsider, true, t0).first_outside,
        "said once per target"
    );
}

#[test]
fn end_sweep_sees_a_recovery_only_on_the_endpoints_own_connection_when_followed() {
    for followed in [false, true] {
        let mut j = escalating(ActionMode::Kill);
        let t0 = Mono::from_secs(100);
        let unit = kill(1, Reason::Dead(Verdict::Stalled));
        assert_eq!(j.decide(&unit, true, t0).action, Action::Kill);
        assert!(
            j.outcome(&unit, &Outcome::Killed, t0).is_none(),
            "watched, not asked"
        );
        let later = t0 + Duration::from_secs(31);
        let rec = fresh_rec(131, 1);
        let s = Socket {
            cookie: Cookie(2),
            followed,
            ..sock(&rec)
        };
        j.look(&s, None, later).unwrap();
        let end = j.end_sweep(later);
        if followed {
            // Not the endpoint's connection (no membership): no recovery, so a restart.
            assert!(end.recovered.is_empty());
            assert_eq!(end.restarts.len(), 1);
            assert_eq!(end.restarts[0].verdict, "unrecovered");
        } else {
            assert_eq!(end.recovered.len(), 1, "any socket to the port shows it");
            assert!(end.restarts.is_empty());
        }
    }
}
