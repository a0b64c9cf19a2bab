//! (c) Round-robin DNS answering rotating subsets for 2 minutes: nothing is killed.

use std::time::Duration;

use anyhow::{Result, ensure};
use lifeline_tests::assertions::endpoint_checks::{untouched, watch_members};
use lifeline_tests::assertions::endpoint_log::RESOLVED;
use lifeline_tests::scenarios::endpoint_scenario::{agent_resolved, watched_on};
use lifeline_tests::{ApiLab, api, mono_ms, require_root};

#[test]
fn round_robin_subsets_for_two_minutes_kill_nothing() -> Result<()> {
    require_root();
    let all = [api(1, false), api(2, false), api(3, false)];
    let l = ApiLab::new(&all)?;
    let agent = agent_resolved(&l, &ApiLab::agent_args(None, &[]), &all)?;
    let c = l.kube_client(&[])?;
    let conn = watched_on(&agent, &c, api(1, false), "ok")?;
    // api1 is absent for two steps (8 s) of every four; the grace is 30 s.
    let sets = vec![
        vec![all[0], all[1]],
        vec![all[2]],
        vec![all[1], all[2]],
        vec![all[0]],
    ];
    let step = Duration::from_secs(4);
    let rot = l
        .dns
        .rotate(sets, step, Duration::from_mins(2), Duration::from_secs(15))?;
    let start = mono_ms();
    let members = watch_members(&agent, conn.local_port, Duration::from_mins(2));
    let applied = rot.finish();
    eprintln!("{} sets served; status members: {members:?}", applied.len());
    ensure!(applied.len() >= 25, "the rotation stalled: {applied:?}");
    untouched(&agent, &c, conn.local_port)?;
    ensure!(
        !members.iter().any(|m| m == "orphaned"),
        "status showed orphaned: {members:?}"
    );
    let oks = c.successes_after(start, "ok").len();
    ensure!(oks >= 100, "only {oks} heartbeats in 2 minutes");
    let changes = agent
        .endpoint_events_with(RESOLVED)
        .iter()
        .filter(|e| e.changed == Some(true) && e.at_ms > start)
        .count();
    ensure!(
        changes >= 5,
        "the agent saw only {changes} changed answers: the rotation did not reach it"
    );
    Ok(())
}
