//! Scenario (b): lifeline as a `Type=notify` unit under a real systemd manager,
//! from the packaged unit file (packaging/lifeline.service) with a test drop-in.
//! The unit becomes active only after the probe is attached (READY=1 follows the `ready`
//! event), `systemctl show` carries its STATUS= text, the watchdog pings keep it alive past
//! several `WatchdogSec` periods, and a stop is clean (STOPPING=1, exit 0, probe detached).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use lifeline_tests::infra::paths::lifeline;
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::{NetNs, require_root, wait_until};

const UNIT: &str = "lifeline-test.service";

/// The packaged unit verbatim, plus a drop-in that points it at the test's namespace,
/// cgroup and files: so the hardening, capabilities and Type=notify really run here.
fn install_unit(m: &UserManager, ns: &NetNs) -> Result<()> {
    let unit = lifeline_tests::infra::paths::workspace().join("packaging/lifeline.service");
    m.install(
        UNIT,
        &std::fs::read_to_string(&unit).with_context(|| format!("read {}", unit.display()))?,
    )?;
    let dir = m.dir().display();
    let dropin = format!(
        "[Service]\nWatchdogSec=4s\nNetworkNamespacePath={net}\nPrivateMounts=yes\nExecStart=\n\
         ExecStart={bin} run --log json --cgroup {cg} --ports 6443 --status-socket {dir}/lifeline/status.sock\n\
         StandardError=append:{dir}/lifeline.log\nPrivateTmp=no\nReadWritePaths={dir}\n",
        net = ns.path(),
        bin = lifeline()?.display(),
        cg = m.cgroup.path().display(),
    );
    m.install_dropin(UNIT, "test.conf", &dropin)
}

fn log_has(m: &UserManager, event: &str) -> bool {
    std::fs::read_to_string(m.dir().join("lifeline.log"))
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains(&format!("\"event\":\"{event}\"")))
}

fn mono_prop(m: &UserManager, prop: &str) -> Result<u64> {
    m.prop(UNIT, prop)?
        .parse()
        .with_context(|| format!("{prop} is not a number"))
}

#[test]
fn notify_unit_ready_status_watchdog_and_stop() -> Result<()> {
    require_root();
    let m = UserManager::start()?;
    let ns = NetNs::new("n")?;
    install_unit(&m, &ns)?;
    m.systemctl(&["start", "--no-block", UNIT])?;

    // Until READY=1 the unit is "activating"; the ready event must precede "active".
    let mut saw_activating = false;
    let diag = |e: anyhow::Error| {
        let status = m.systemctl_text(&["status", "--no-pager", "-l", UNIT]);
        let log = std::fs::read_to_string(m.dir().join("lifeline.log")).unwrap_or_default();
        anyhow::anyhow!("{e:#}\n{status}\nlifeline's log:\n{log}")
    };
    wait_until(
        "the unit to become active",
        Duration::from_mins(1),
        Duration::from_millis(20),
        || {
            let state = m.prop(UNIT, "ActiveState")?;
            saw_activating |= state == "activating";
            ensure!(
                state != "failed",
                "the unit failed: {}",
                std::fs::read_to_string(m.dir().join("lifeline.log")).unwrap_or_default()
            );
            Ok((state == "active").then_some(()))
        },
    )
    .map_err(diag)?;
    let ready_logged = log_has(&m, "ready");
    assert!(ready_logged, "active before lifeline logged ready");
    assert!(
        saw_activating,
        "never saw the unit activating: not waiting for READY=1?"
    );
    let started = mono_prop(&m, "ExecMainStartTimestampMonotonic")?;
    let active = mono_prop(&m, "ActiveEnterTimestampMonotonic")?;
    assert!(
        active > started,
        "active at {active} µs, main process started at {started} µs"
    );

    let status = wait_until(
        "STATUS= text",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || Ok(Some(m.prop(UNIT, "StatusText")?).filter(|s| s.starts_with("watching "))),
    )?;
    eprintln!(
        "StatusText: {status}; ready after {} ms",
        (active - started) / 1000
    );
    assert_eq!(status, "watching 0 sockets: 0 stalled, 0 suspect; 0 killed");

    // Three WatchdogSec periods: without pings systemd would have killed it by now.
    let first_ping = mono_prop(&m, "WatchdogTimestampMonotonic")?;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(12) {
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            m.prop(UNIT, "ActiveState")?,
            "active",
            "the watchdog fired?"
        );
    }
    let last_ping = mono_prop(&m, "WatchdogTimestampMonotonic")?;
    assert!(
        last_ping > first_ping,
        "no watchdog ping in 12 s ({first_ping} -> {last_ping})"
    );
    assert_eq!(m.prop(UNIT, "NRestarts")?, "0");

    m.systemctl(&["stop", UNIT])?;
    assert_eq!(m.prop(UNIT, "ActiveState")?, "inactive");
    assert_eq!(m.prop(UNIT, "Result")?, "success");
    assert_eq!(m.prop(UNIT, "ExecMainStatus")?, "0");
    assert!(log_has(&m, "stopped"), "no stopped event after the stop");
    Ok(())
}
