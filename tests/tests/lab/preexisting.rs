//! Scenario (d): a connection opened before the agent started (the agent restarted, or
//! kubelet was up first) is still found, watched and killed when it black-holes.
//!
//! What arms it depends on the kernel (`lifeline_common::features`): the TCP iterator arms
//! its callbacks from 6.12 and its keepalive from 5.15; without them the socket is polled
//! through `sock_diag` and `lifeline status` says so and why, never "not armed (yet)".

use std::time::Duration;

use anyhow::{Context as _, ensure};
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::scenario::{Setup, blackhole_until_killed};
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
    let st = agent.status()?;
    let sock = st
        .socket_for_port(port)
        .context("socket missing from status")?;
    // It was found by the start-up scan, so this test really exercised that path.
    ensure!(sock.source == "adopted", "not adopted: {}", sock.raw);
    check_arming(sock, &table)?;

    let report = blackhole_until_killed(&s, &agent, &client, Duration::from_secs(4))?;
    eprintln!(
        "port {port}: killed {} ms after the black hole",
        report.decision.at_ms - report.fault_ms
    );
    Ok(())
}

/// Callbacks and keepalive of the adopted socket: armed where the kernel can, else the
/// documented degradation, in `status --json` and in the table.
fn check_arming(sock: &lifeline_tests::StatusSocket, table: &str) -> anyhow::Result<()> {
    let callbacks = &features::ITER_CALLBACKS;
    if kernel::has(callbacks) {
        ensure!(sock.polled.is_none(), "armed, yet polled: {}", sock.raw);
        kernel::report(
            callbacks,
            "SOURCE `adopted`: callbacks armed by the TCP iterator",
        );
    } else {
        let why = sock
            .polled
            .as_deref()
            .context("not armed, yet not polled")?;
        let needs = format!("needs Linux {}", kernel::since(callbacks));
        ensure!(why.contains(&needs), "polled without saying why: {why}");
        let line = table
            .lines()
            .find(|l| l.starts_with("polled: 1 socket(s)"))
            .with_context(|| format!("no `polled:` line in the table:\n{table}"))?;
        ensure!(
            table.contains(" polled "),
            "SOURCE is not `polled`:\n{table}"
        );
        kernel::report(callbacks, &format!("SOURCE `polled`; {line}"));
    }
    let keepalive = &features::ITER_KEEPALIVE;
    let ka = sock.keepalive.as_str();
    ensure!(
        ka != "not armed (yet)",
        "keepalive pending forever: {}",
        sock.raw
    );
    if kernel::has(keepalive) {
        ensure!(ka.starts_with("1s,1s,20"), "keepalive not armed: {ka}");
    } else {
        let needs = format!("needs Linux {}", kernel::since(keepalive));
        ensure!(
            ka.starts_with("not armed: pre-existing socket") && ka.contains(&needs),
            "keepalive: {ka}"
        );
    }
    kernel::report(keepalive, &format!("KEEPALIVE `{ka}`"));
    Ok(())
}
