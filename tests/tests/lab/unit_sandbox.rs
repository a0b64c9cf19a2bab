//! The packaged unit's sandbox, measured: `lifeline check` and a kill under every confining
//! setting of packaging/lifeline.service (its three capabilities, `SystemCallFilter=
//! @system-service bpf`, `RestrictAddressFamilies`, `ProtectSystem=strict`, `UMask`,
//! `LimitNOFILE`, `MemoryMax` ...), run by a real systemd manager (`systemd-run --user`,
//! `tests/src/fixtures/unit_sandbox.rs`) in the lab's client namespace. `check` passes with every
//! hook attached (the cgroup tracepoints' `perf_event_open` and the keepalive news fallback
//! included) and `run` kills a black-holed connection and stops cleanly.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::infra::tracefs::LabTracefs;
use lifeline_tests::scenarios::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::{Agent, Proc, TempDir, fixtures::unit_sandbox, require_root};

/// The rows that must pass: every hook attaches, the kill path works.
const ROWS: [&str; 9] = [
    "privileges",
    "seccomp",
    "sock_ops attach",
    "cgroup tracepoints",
    "unanswered probes",
    "bpf_setsockopt",
    "sock_ops watch",
    "keepalive",
    "SOCK_DESTROY",
];

#[test]
fn check_and_a_kill_under_the_units_sandbox() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    // Before the manager, whose mount namespace is a copy made at its start.
    let tracefs = LabTracefs::new()?;
    let m = UserManager::start()?;
    let bin = lifeline_tests::infra::paths::lifeline()?;
    let dir = TempDir::new()?;
    // The lab's stand-ins for the node: its network namespace, the tracefs systemd mounts
    // at boot (sys-kernel-tracing.mount, which the unit orders itself after), and a
    // writable directory in /tmp for the status socket (the unit's own is its
    // RuntimeDirectory).
    let extra = vec![
        format!("NetworkNamespacePath={}", s.lab.client.path()),
        format!(
            "BindReadOnlyPaths={}:/sys/kernel/tracing",
            tracefs.path().display()
        ),
        "PrivateTmp=no".to_owned(),
        format!("ReadWritePaths={}", dir.path().display()),
    ];
    let cgroup = s.cgroup.path().to_str().context("utf-8")?;
    let target = ["--cgroup", cgroup, "--ports", "6443"];

    let mut check = unit_sandbox::command(
        &m,
        "lifeline-check",
        &extra,
        &bin,
        &[&["check"], &target[..]].concat(),
    )?;
    let out = lifeline_tests::infra::cmd::output(&mut check)?;
    let table = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "check under the unit's sandbox:\n{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(out.status.success(), "check failed under the sandbox");
    for name in ROWS {
        let row = table
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .with_context(|| format!("no row {name}"))?;
        ensure!(row.trim().starts_with("pass"), "row {name}: {row}");
    }

    let socket = dir.path().join("status.sock");
    let socket_arg = socket.to_str().context("utf-8")?;
    let run = [
        &[
            "run",
            "--log",
            "json",
            "--stall-timeout",
            "4s",
            "--status-socket",
            socket_arg,
        ],
        &target[..],
    ]
    .concat();
    let proc = Proc::spawn(
        "systemd-run lifeline run",
        unit_sandbox::command(&m, "lifeline-run", &extra, &bin, &run)?,
    )?;
    let mut agent = Agent::from_proc(proc, socket)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let client = s.heartbeat_client(&[])?;
    let report = blackhole_until_killed(&s, &agent, &client, Duration::from_secs(4))?;
    eprintln!(
        "killed {} ms after the black hole",
        report.decision.at_ms - report.fault_ms
    );
    m.systemctl(&["stop", "lifeline-run.service"])?;
    let status = agent
        .proc
        .wait_timeout(Duration::from_secs(20))
        .context("systemd-run did not end after the stop")?;
    ensure!(status.success(), "the unit ended with {status}");
    ensure!(
        agent.messages("INFO").iter().any(|m| m == "probe detached"),
        "{}",
        agent.proc.stderr_text()
    );
    Ok(())
}
