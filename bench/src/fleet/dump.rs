//! Evidence beside the report, under target/bench/ (not part of the document): every agent's
//! log and every client's connection events (connects, errors, re-dials; not the heartbeats)
//! per scenario, one JSON line each, so a surprising number can be traced to what happened.

use std::path::PathBuf;

use lifeline_tests::Agent;

use super::nodes::NodeRun;
use super::scenario::Scenario;

fn path(kind: &str, s: Scenario) -> PathBuf {
    let letter = s.label().split('.').next().unwrap_or("x");
    lifeline_tests::infra::paths::workspace()
        .join(format!("target/bench/fleet-{kind}-{letter}.jsonl"))
}

fn write(path: &PathBuf, lines: &[String]) {
    let made = path.parent().map_or(Ok(()), std::fs::create_dir_all);
    if let Err(e) = made.and_then(|()| std::fs::write(path, lines.join("\n"))) {
        eprintln!("lab-bench: fleet: cannot write {}: {e}", path.display());
    }
}

/// Every agent's log lines (the probe's own chatter left out).
pub(super) fn agents(s: Scenario, agents: &[Agent]) {
    let lines: Vec<String> = agents
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            a.log()
                .into_iter()
                .filter(|(_, v)| v["target"] != "lifeline::probe")
                .map(move |(at, v)| format!(r#"{{"agent":{i},"read_ms":{at},"log":{v}}}"#))
        })
        .collect();
    write(&path("agents", s), &lines);
}

/// Every client's events other than its successes, with the node's index.
pub(super) fn clients(s: Scenario, runs: &[NodeRun]) {
    let mut lines = Vec::new();
    for (k, run) in runs.iter().enumerate() {
        let Some(p) = &run.client else { continue };
        for l in p.stdout_lines() {
            if !l.text.contains(r#""event":"ok""#) && !l.text.contains("watch-event") {
                lines.push(format!(r#"{{"node":{k},"line":{}}}"#, l.text));
            }
        }
    }
    write(&path("clients", s), &lines);
}
