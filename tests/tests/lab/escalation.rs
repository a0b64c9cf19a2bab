//! Escalation to a restart of kubelet's unit through systemd's D-Bus API, against a real
//! systemd manager whose `kubelet.service` is the lab's client. The agent targets the unit's
//! own cgroup, as in production: the restart re-creates it, and the restarted client's
//! connection must be watched from its start all the same.
//! (`NRestarts` counts only the manager's own `Restart=` restarts, not `RestartUnit` calls,
//! so a restart shows as a new `MainPID` and a new `InvocationID`; `NRestarts` stays 0.)

use std::time::Duration;

use anyhow::Result;
use lifeline_tests::assertions::watched::{
    assert_watched_from_start, blackhole_is_killed, wait_watched,
};
use lifeline_tests::fixtures::client::start_server;
use lifeline_tests::fixtures::kubelet_unit::{self, UNIT, identity, wait_connection};
use lifeline_tests::fixtures::unit_agent::start as agent;
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::{Agent, Decision, Lab, require_root, wait_until};

/// The first restart decision about the client socket on `port`.
fn restart_decision(a: &Agent, port: u16, within: Duration) -> Result<Decision> {
    wait_until(
        "a restart decision",
        within,
        Duration::from_millis(100),
        || {
            Ok(a.decisions()
                .into_iter()
                .find(|d| d.action == "restart" && d.is_for_port(port)))
        },
    )
}

/// `--action restart`: a confirmed stall restarts the unit instead of killing the socket;
/// with `--max-restarts 1` the next stall within the hour is held back, and says so.
#[test]
fn action_restart_restarts_the_unit_then_the_budget_holds() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::start(&m, &lab, false)?;
    let before = identity(&m)?;
    let port = wait_connection(&m, 1)?;
    let a = agent(&lab, &m, &["--action", "restart", "--max-restarts", "1"])?;

    let _fault = lab.blackhole_flow(port)?;
    let d = restart_decision(&a, port, Duration::from_secs(30))?;
    assert_eq!(d.outcome, "restarted", "{}", d.raw);
    assert_eq!(d.verdict, "stalled");
    assert_eq!(
        d.raw.pointer("/fields/reason").and_then(|v| v.as_str()),
        Some("action-restart")
    );
    assert!(
        a.decisions().iter().all(|d| d.action != "kill"),
        "killed although --action restart"
    );
    let after = identity(&m)?;
    assert_ne!(after.0, before.0, "MainPID unchanged");
    assert_ne!(after.1, before.1, "InvocationID unchanged");
    assert_eq!(m.prop(UNIT, "NRestarts")?, "0");
    assert_eq!(m.prop(UNIT, "ActiveState")?, "active");

    // The restarted client connects anew (only the old flow is black-holed), in a new cgroup:
    // watched from its start; break that too.
    let port2 = wait_connection(&m, 2)?;
    let sock = wait_watched(&a, port2, Duration::from_secs(10))?;
    assert_watched_from_start(&sock, kubelet_unit::main_pid(&m)?)?;
    let _fault2 = lab.blackhole_flow(port2)?;
    let held = restart_decision(&a, port2, Duration::from_secs(30))?;
    assert_eq!(held.outcome, "rate-limited", "{}", held.raw);
    let retry = held
        .raw
        .pointer("/fields/retry_in_ms")
        .and_then(serde_json::Value::as_u64);
    assert!(
        retry.is_some_and(|ms| ms > 3_000_000),
        "retry_in_ms {retry:?}: about an hour"
    );
    assert_eq!(identity(&m)?, after, "restarted despite the budget");
    Ok(())
}

/// Kill first; the client does not re-dial (it exits), so no healthy connection comes back
/// within `--escalate-after` and the unit is restarted; its new client connects.
#[test]
fn no_recovery_after_kill_escalates_to_restart() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::start(&m, &lab, false)?;
    let before = identity(&m)?;
    let port = wait_connection(&m, 1)?;
    let a = agent(&lab, &m, &["--escalate-after", "3s"])?;

    let _fault = lab.blackhole_flow(port)?;
    let d = restart_decision(&a, port, Duration::from_secs(40))?;
    let kill = a
        .decisions()
        .into_iter()
        .find(|d| d.action == "kill" && d.is_for_port(port));
    let kill = kill.expect("the socket was killed first");
    assert_eq!(kill.outcome, "killed");
    assert_eq!(d.outcome, "restarted", "{}", d.raw);
    assert_eq!(d.verdict, "unrecovered");
    assert_eq!(
        d.raw.pointer("/fields/reason").and_then(|v| v.as_str()),
        Some("no-recovery")
    );
    let waited = d
        .logged_ms
        .zip(kill.logged_ms)
        .map(|(r, k)| r.saturating_sub(k));
    assert!(
        waited.is_some_and(|ms| ms >= 3000),
        "restarted {waited:?} ms after the kill"
    );
    assert_ne!(identity(&m)?.0, before.0, "MainPID unchanged");
    let port2 = wait_connection(&m, 2)?;
    assert_ne!(port2, port);
    // The restart re-created the unit's cgroup: the new connection is watched and healed.
    let sock = wait_watched(&a, port2, Duration::from_secs(10))?;
    assert_watched_from_start(&sock, kubelet_unit::main_pid(&m)?)?;
    blackhole_is_killed(&lab, &a, port2, Duration::from_secs(30))?;
    Ok(())
}

/// A client that re-dials recovers by itself: the kill is enough and nothing is restarted.
#[test]
fn recovery_after_kill_does_not_restart() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::start(&m, &lab, true)?;
    let before = identity(&m)?;
    let port = wait_connection(&m, 1)?;
    let a = agent(&lab, &m, &["--escalate-after", "3s"])?;

    blackhole_is_killed(&lab, &a, port, Duration::from_secs(30))?;
    wait_connection(&m, 2)?;
    std::thread::sleep(Duration::from_secs(6)); // twice --escalate-after
    assert!(
        a.decisions().iter().all(|d| d.action != "restart"),
        "{:?}",
        a.decisions()
    );
    assert_eq!(identity(&m)?, before, "the unit was restarted");
    Ok(())
}

/// `--action restart` on an idle connection whose peer vanished: the restart decision carries
/// the socket's real verdict, `silent` (not a generic "stalled").
#[test]
fn action_restart_logs_the_real_verdict_of_a_silent_socket() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::install_idle(&m, &lab)?;
    kubelet_unit::start_installed(&m)?;
    let port = wait_connection(&m, 1)?;
    let args = [
        "--action",
        "restart",
        "--max-restarts",
        "1",
        "--keepalive",
        "2s,1s,5",
        "--silent-probes",
        "2",
        "--silent-timeout",
        "5s",
    ];
    let a = agent(&lab, &m, &args)?;
    wait_watched(&a, port, Duration::from_secs(10))?;

    let _fault = lab.blackhole_flow(port)?;
    let d = restart_decision(&a, port, Duration::from_secs(30))?;
    assert_eq!(d.verdict, "silent", "{}", d.raw);
    assert_eq!(d.outcome, "restarted", "{}", d.raw);
    Ok(())
}
