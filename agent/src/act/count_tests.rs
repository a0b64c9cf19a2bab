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
        let (event, class) = (outcome.label(), OutcomeClass::from(outcome));
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
    assert_eq!(OutcomeClass::Held.text(), "held: no healthy endpoint");
    assert_eq!(OutcomeClass::RateLimited.text(), "rate-limited");
    assert_eq!(OutcomeClass::Backoff.text(), "backoff");
    assert_eq!(OutcomeClass::Policy.text(), "policy: log");
    assert_eq!(OutcomeClass::Unreadable.text(), "unreadable");
}

#[test]
fn a_kill_held_or_limited_is_still_a_kill_decision() {
    assert_eq!(DecisionAction::from(Action::Kill), DecisionAction::Kill);
    assert_eq!(
        DecisionAction::from(Action::RateLimited),
        DecisionAction::Kill
    );
    assert_eq!(
        DecisionAction::from(Action::DryRun),
        DecisionAction::Nothing
    );
    assert_eq!(DecisionAction::from(Action::Hold), DecisionAction::Hold);
    assert_eq!(DecisionAction::Nothing.label(), "none");
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
    counts.count(&decided(DecisionAction::Kill, OutcomeClass::Gone));
    counts.count(&decided(DecisionAction::Kill, OutcomeClass::Failed));
    counts.count(&decided(DecisionAction::Nothing, OutcomeClass::DryRun));
    assert_eq!(counts.kills.get(), 0);
    counts.count(&decided(DecisionAction::Kill, OutcomeClass::Killed));
    counts.count(&decided(DecisionAction::Hold, OutcomeClass::Held));
    assert_eq!(counts.kills.get(), 1);
    let held = HoldLabels {
        action: DecisionAction::Hold,
        reason: "no-healthy-endpoint",
    };
    assert_eq!(counts.holds.get_or_create(&held).get(), 1);
    let killed = DecisionLabels {
        verdict: "stalled",
        action: DecisionAction::Kill,
        outcome: OutcomeClass::Killed,
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
