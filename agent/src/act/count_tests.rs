//! The one mapping from a decision to its words: the event's `outcome` and the metrics'
//! labels agree for every outcome the judge can give.

use super::*;
use crate::judge::{Action, Outcome};

#[test]
fn every_judge_outcome_is_counted_under_its_events_class() {
    let all = [
        Outcome::Killed,
        Outcome::Gone,
        Outcome::Failed("refused".to_owned()),
        Outcome::DryRun,
        Outcome::RateLimited,
        Outcome::Held,
    ];
    for outcome in &all {
        let (event, class) = (outcome.label(), Class::from(outcome));
        match outcome {
            Outcome::Failed(why) => assert_eq!(event, format!("{}: {why}", class.label())),
            _ => assert_eq!(event, class.text()),
        }
        // The label is the class before any free text.
        assert_eq!(event.split(':').next(), Some(class.label()));
    }
}

#[test]
fn the_restarters_declines_say_what_they_said_before() {
    assert_eq!(Class::Held.text(), "held: no healthy endpoint");
    assert_eq!(Class::RateLimited.text(), "rate-limited");
    assert_eq!(Class::Backoff.text(), "backoff");
    assert_eq!(Class::Policy.text(), "policy: log");
    assert_eq!(Class::Unreadable.text(), "unreadable");
}

#[test]
fn a_kill_held_or_limited_is_still_a_kill_decision() {
    assert_eq!(Did::from(Action::Kill), Did::Kill);
    assert_eq!(Did::from(Action::RateLimited), Did::Kill);
    assert_eq!(Did::from(Action::DryRun), Did::Nothing);
    assert_eq!(Did::from(Action::Hold), Did::Hold);
    assert_eq!(Did::Nothing.label(), "none");
}

#[test]
fn only_a_destroyed_socket_is_a_kill_and_a_hold_names_its_reason() {
    let counts = Counts::default();
    let decided = |did, class| Decided {
        verdict: "stalled",
        did,
        class,
        trouble_age_ms: 1500,
    };
    counts.count(&decided(Did::Kill, Class::Gone));
    counts.count(&decided(Did::Kill, Class::Failed));
    counts.count(&decided(Did::Nothing, Class::DryRun));
    assert_eq!(counts.kills.get(), 0);
    counts.count(&decided(Did::Kill, Class::Killed));
    counts.count(&decided(Did::Hold, Class::Held));
    assert_eq!(counts.kills.get(), 1);
    let held = HoldLabels {
        action: Did::Hold,
        reason: "no-healthy-endpoint",
    };
    assert_eq!(counts.holds.get_or_create(&held).get(), 1);
    let killed = DecisionLabels {
        verdict: "stalled",
        action: Did::Kill,
        outcome: Class::Killed,
    };
    assert_eq!(counts.decisions.get_or_create(&killed).get(), 1);
}

/// The series alerts are written on exist at 0 before any event (see `Counts::default`).
#[test]
fn holds_and_restarts_are_exposed_at_zero_from_the_start() {
    let counts = Counts::default();
    let mut text = String::new();
    let mut r = prometheus_client::registry::Registry::default();
    r.register("holds", "", counts.holds.clone());
    r.register("restarts", "", counts.restarts.clone());
    prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
    for series in [
        r#"holds_total{action="kill",reason="rate-limited"} 0"#,
        r#"holds_total{action="hold",reason="no-healthy-endpoint"} 0"#,
        r#"holds_total{action="restart",reason="rate-limited"} 0"#,
        r#"holds_total{action="restart",reason="backoff"} 0"#,
        r#"holds_total{action="restart",reason="no-healthy-endpoint"} 0"#,
        r#"restarts_total{result="restarted"} 0"#,
        r#"restarts_total{result="failed"} 0"#,
    ] {
        assert!(text.contains(series), "{series} in\n{text}");
    }
}
