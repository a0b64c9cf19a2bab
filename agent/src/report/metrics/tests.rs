//! The exposition, series by series, as the lab and the README know it: every decision the
//! agent logs, counted through the handles `run` hands out.

use std::collections::HashSet;

use lifeline_common::config::stats;

use super::Metrics;
use crate::{
    act::{Decided, DecisionAction, OutcomeClass},
    report::status::Snapshot,
};

/// The series (no comments), sorted: a family's series come in hash order. The servers'
/// counters are there at 0 before any client is turned away.
fn series(m: &Metrics) -> Vec<String> {
    let mut lines: Vec<String> = m
        .encode()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[test]
fn every_decision_lands_in_its_series() {
    let m = Metrics::new();
    let counts = m.counts();
    for (verdict, did, class, trouble_age_ms) in [
        ("stalled", DecisionAction::Kill, OutcomeClass::Killed, 4200),
        ("silent", DecisionAction::Kill, OutcomeClass::Gone, 1),
        ("stalled", DecisionAction::Kill, OutcomeClass::Failed, 2),
        ("stalled", DecisionAction::Nothing, OutcomeClass::DryRun, 3),
        (
            "stalled",
            DecisionAction::Kill,
            OutcomeClass::RateLimited,
            4,
        ),
        ("dead-peer", DecisionAction::Hold, OutcomeClass::Held, 5),
        (
            "stalled",
            DecisionAction::Restart,
            OutcomeClass::Restarted,
            6,
        ),
        ("stalled", DecisionAction::Restart, OutcomeClass::Failed, 7),
        (
            "unrecovered",
            DecisionAction::Restart,
            OutcomeClass::Backoff,
            8,
        ),
        (
            "stalled",
            DecisionAction::Restart,
            OutcomeClass::RateLimited,
            9,
        ),
        ("stalled", DecisionAction::Restart, OutcomeClass::Held, 10),
        ("orphaned", DecisionAction::Nothing, OutcomeClass::Policy, 0),
        (
            "unknown",
            DecisionAction::Nothing,
            OutcomeClass::Unreadable,
            0,
        ),
    ] {
        counts.count(&Decided {
            verdict,
            did,
            class,
            trouble_age_ms,
        });
    }
    m.dns_failures().inc();
    let expected = include_str!("tests_expected.txt");
    let mut want: Vec<&str> = expected.lines().collect();
    want.extend([
        "lifeline_watched_sockets 0",
        "lifeline_endpoint_path_down 0",
    ]);
    want.sort_unstable();
    assert_eq!(series(&m), want);
}

#[test]
fn gauges_and_probe_counters_follow_the_snapshots() {
    let m = Metrics::new();
    let mut s = Snapshot {
        watched: 3,
        path_down_ms: Some(1_500),
        ..Snapshot::default()
    };
    s.verdicts.insert("healthy".to_owned(), 2);
    s.verdicts.insert("idle".to_owned(), 1);
    s.probe_stats[stats::UNANSWERED as usize] = 7;
    s.probe_stats[stats::SOCKETS_FULL as usize] = 5;
    s.probe_stats[stats::OWNERS_SKIPPED as usize] = 90_000;
    s.capacity.inbox_dropped = 3;
    let mut seen = HashSet::new();
    m.clone().observe(&s, &mut seen);
    let text = m.encode();
    for line in [
        "lifeline_watched_sockets 3",
        "lifeline_endpoint_path_down 1",
        "lifeline_sockets{verdict=\"healthy\"} 2",
        "lifeline_sockets{verdict=\"idle\"} 1",
        "lifeline_probe_unanswered_news_total 7",
        "lifeline_probe_sockets_full_total 5",
        "lifeline_probe_owners_skipped_total 90000",
        "lifeline_news_inbox_dropped_total 3",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }
    // A verdict gone from the snapshot drops to 0 rather than vanishing.
    s.verdicts.remove("idle");
    m.observe(&s, &mut seen);
    assert!(
        m.encode()
            .contains("lifeline_sockets{verdict=\"idle\"} 0\n")
    );
}

#[test]
fn a_hidden_device_is_1_an_unhidden_one_0_and_a_device_left_drops_out() {
    let m = Metrics::new();
    let mut s = Snapshot {
        fast_probes: serde_json::from_str(
            r#"{"state":"hidden","devices":[
            {"device":"eth0","chain":{"kind":"tcx"},"reach":"hidden","seen":0,"sent":9},
            {"device":"eth1","chain":{"kind":"tcx"},"reach":"out","seen":5,"sent":5}]}"#,
        )
        .unwrap(),
        ..Snapshot::default()
    };
    m.observe(&s, &mut HashSet::new());
    let text = m.encode();
    assert!(
        text.contains("lifeline_fast_probes_hidden{device=\"eth0\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("lifeline_fast_probes_hidden{device=\"eth1\"} 0\n"),
        "{text}"
    );
    s.fast_probes.devices.remove(0);
    m.observe(&s, &mut HashSet::new());
    let text = m.encode();
    assert!(!text.contains("device=\"eth0\""), "{text}");
}
