//! Escalation to a restart of kubelet's unit, in a row, under a real systemd manager whose
//! `kubelet.service` is the lab's client: every restart works (`--max-restarts 3` means
//! three real restarts over one agent's kept D-Bus connection, subscribed once), the fourth
//! is rate-limited, and a restart after the bus itself restarted reconnects and works.

use std::time::Duration;

use anyhow::{Result, ensure};
use lifeline_tests::assertions::watched::{assert_watched_from_start, wait_watched};
use lifeline_tests::fixtures::client::start_server;
use lifeline_tests::fixtures::kubelet_unit::{self, identity, wait_connection};
use lifeline_tests::fixtures::unit_agent::{decisions, start as agent};
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::{Agent, Decision, Fault, Lab, require_root, wait_until};

/// Black-holes the unit's `n`-th connection (watched first) and returns the restart
/// decision about it, with the unit's identity from before.
fn break_connection(
    lab: &Lab,
    m: &UserManager,
    a: &Agent,
    n: usize,
    faults: &mut Vec<Fault>,
) -> Result<(Decision, (String, String))> {
    let port = wait_connection(m, n)?;
    let sock = wait_watched(a, port, Duration::from_secs(15))?;
    if n > 1 {
        assert_watched_from_start(&sock, kubelet_unit::main_pid(m)?)?;
    }
    let before = identity(m)?;
    faults.push(lab.blackhole_flow(port)?);
    let d = wait_until(
        &format!("restart decision {n}"),
        Duration::from_secs(40),
        Duration::from_millis(100),
        || Ok(decisions(a, "restart", port).into_iter().next()),
    )?;
    Ok((d, before))
}

/// A real restart: the decision says so, and the unit has a new `MainPID` and `InvocationID`.
fn restarted(m: &UserManager, n: usize, (d, before): &(Decision, (String, String))) -> Result<()> {
    ensure!(d.outcome == "restarted", "restart {n}: {}", d.raw);
    let after = identity(m)?;
    ensure!(after.0 != before.0, "restart {n}: MainPID unchanged");
    ensure!(after.1 != before.1, "restart {n}: InvocationID unchanged");
    Ok(())
}

/// `--action restart --max-restarts 3 --restart-backoff 1s`: four black holes on the unit's
/// connection in a row; the first three each restart it for real (a new `MainPID` and
/// `InvocationID`, and its new connection watched from its start), the fourth is rate-limited.
#[test]
fn three_restarts_in_a_row_then_the_fourth_is_rate_limited() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::start(&m, &lab, false)?;
    let args = [
        "--action",
        "restart",
        "--max-restarts",
        "3",
        "--restart-backoff",
        "1s",
    ];
    let a = agent(&lab, &m, &args)?;
    let mut faults = Vec::new();
    for n in 1..=3 {
        restarted(&m, n, &break_connection(&lab, &m, &a, n, &mut faults)?)?;
    }
    let (d, before) = break_connection(&lab, &m, &a, 4, &mut faults)?;
    ensure!(d.outcome == "rate-limited", "restart 4: {}", d.raw);
    std::thread::sleep(Duration::from_secs(2));
    ensure!(identity(&m)? == before, "restarted despite the budget");
    let failed: Vec<_> = a
        .decisions()
        .into_iter()
        .filter(|d| d.outcome.starts_with("failed"))
        .collect();
    ensure!(failed.is_empty(), "failed decisions: {failed:?}");
    ensure!(
        a.decisions().iter().all(|d| d.action != "kill"),
        "killed although --action restart"
    );
    Ok(())
}

/// The bus restarts between two restarts (every connection to it is gone): the
/// next restart finds the agent's kept connection dead, reconnects, subscribes anew, and
/// restarts the unit for real.
#[test]
fn a_restart_after_the_bus_restarted_reconnects() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::start(&m, &lab, false)?;
    let a = agent(
        &lab,
        &m,
        &["--action", "restart", "--restart-backoff", "1s"],
    )?;
    let mut faults = Vec::new();
    restarted(&m, 1, &break_connection(&lab, &m, &a, 1, &mut faults)?)?;
    wait_connection(&m, 2)?;
    m.restart_bus()?;
    restarted(&m, 2, &break_connection(&lab, &m, &a, 2, &mut faults)?)?;
    let reconnected = a
        .messages("INFO")
        .into_iter()
        .any(|msg| msg.contains("the D-Bus connection to systemd is gone; reconnecting"));
    ensure!(reconnected, "no reconnect logged: {:?}", a.messages("INFO"));
    Ok(())
}
