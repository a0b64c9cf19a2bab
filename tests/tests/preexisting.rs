//! Scenario (d): a connection opened before the agent started (the agent restarted, or
//! kubelet was up first) is still found, watched and killed when it black-holes.

use std::time::Duration;

use lifeline_tests::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::{Agent, require_root};

#[test]
fn preexisting_socket_is_killed() -> anyhow::Result<()> {
    require_root();
    let s = Setup::new()?;
    let client = s.heartbeat_client(&[])?;
    let port = client.local_port().expect("port");
    client.wait_event("two heartbeats", Duration::from_secs(10), |e| {
        e.event == "ok" && e.raw["seq"] == 2
    })?;

    let mut agent = Agent::start(&s.lab, &s.cgroup)?;
    agent.wait_ready(Duration::from_mins(1))?;
    // The operator's view: the adopted socket is listed before anything goes wrong.
    let local = format!("198.51.100.1:{port}");
    let table = lifeline_tests::wait_until(
        "the socket in `lifeline status`",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || Ok(agent.status_table().ok().filter(|t| t.contains(&local))),
    )?;
    eprintln!("lifeline status:\n{table}");
    let report = blackhole_until_killed(&s, &agent, &client, Duration::from_secs(4))?;
    let source = report
        .seen
        .first()
        .map_or("?", |(_, sock)| sock.source.as_str());
    eprintln!(
        "port {port}: status source {source:?}; killed {} ms after the black hole",
        report.decision.at_ms - report.fault_ms
    );
    // It was found by the start-up scan, so this test really exercised that path.
    assert_eq!(
        source, "adopted",
        "a pre-existing socket should be `adopted`"
    );
    Ok(())
}
