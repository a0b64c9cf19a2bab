//! `--action restart` and orphans: a migration is hygiene, not a failure, so it stays a kill
//! (at a quiet moment, after the grace and within the spread) and nothing is restarted.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::scenarios::endpoint_scenario::{agent_resolved, check_kill, watched_on};
use lifeline_tests::{ApiLab, api, require_root};

/// `--action restart` replaces kills of broken sockets by restarts, but an orphan migration is
/// hygiene, not a failure: it stays a kill at a quiet moment, and nothing is restarted.
#[test]
fn action_restart_still_migrates_orphans_by_a_kill() -> Result<()> {
    require_root();
    let m = lifeline_tests::infra::systemd::UserManager::start()?;
    m.install("kubelet.service", "[Service]\nExecStart=/bin/sleep 300\n")?;
    m.systemctl(&["start", "kubelet.service"])?;
    let pid = m.prop("kubelet.service", "MainPID")?;
    let l = ApiLab::new(&[api(1, false)])?;
    let bus = m.bus_address();
    let extra = [
        "--orphan-grace",
        "3s",
        "--migrate-spread",
        "1s",
        "--action",
        "restart",
        "--restart-unit",
        "kubelet.service",
        "--systemd-bus",
        &bus,
    ];
    let agent = agent_resolved(&l, &ApiLab::agent_args(None, &extra), &[api(1, false)])?;
    let c = l.kube_client(&[])?;
    let old = watched_on(&agent, &c, api(1, false), "ok")?;

    l.dns.set(&[api(2, false)])?;
    let kill = lifeline_tests::wait_until(
        "the migration",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || Ok(agent.kills_of(old.local_port).into_iter().next()),
    )
    .with_context(|| agent.proc.stderr_text())?;
    check_kill(&kill, "orphaned")?;
    std::thread::sleep(Duration::from_secs(2));
    let restarts: Vec<_> = agent
        .decisions()
        .into_iter()
        .filter(|d| d.action == "restart")
        .collect();
    ensure!(
        restarts.is_empty(),
        "a migration restarted the unit: {restarts:?}"
    );
    ensure!(
        m.prop("kubelet.service", "MainPID")? == pid,
        "the unit was restarted"
    );
    Ok(())
}
