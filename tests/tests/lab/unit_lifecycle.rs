//! The watch model against a real systemd manager, with kubelet's own unit cgroup as the
//! target exactly as in production (`system.slice/kubelet.service`): systemd deletes and
//! re-creates that cgroup on every start, and lifeline must watch the new one from its
//! first connection. Every test first asserts the socket it is about is watched.

use std::os::unix::fs::MetadataExt as _;
use std::time::Duration;

use anyhow::{Context as _, Result};
use lifeline_tests::assertions::watched::{
    assert_watched_from_start, blackhole_is_killed, wait_watched,
};
use lifeline_tests::fixtures::client::start_server;
use lifeline_tests::fixtures::kubelet_unit::{self, UNIT, wait_connection};
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::{Agent, AgentArgs, Lab, require_root, wait_until};

const KILL_WITHIN: Duration = Duration::from_secs(30);

fn agent_for_unit(lab: &Lab, m: &UserManager) -> Result<Agent> {
    let dir = kubelet_unit::cgroup_dir(m);
    let mut a = Agent::start_targets(lab, &[&dir], &AgentArgs::default())?;
    a.wait_ready(Duration::from_mins(1))?;
    Ok(a)
}

fn inode(m: &UserManager) -> Result<u64> {
    let dir = kubelet_unit::cgroup_dir(m);
    Ok(std::fs::metadata(&dir)
        .with_context(|| format!("{}", dir.display()))?
        .ino())
}

/// The `n`-th connection of the unit's client: watched from its SYN, owned by the unit's
/// main process, and killed when black-holed.
fn nth_connection_is_protected(lab: &Lab, m: &UserManager, a: &Agent, n: usize) -> Result<()> {
    let port = wait_connection(m, n)?;
    let sock = wait_watched(a, port, Duration::from_secs(10))?;
    assert_watched_from_start(&sock, kubelet_unit::main_pid(m)?)?;
    assert_eq!(sock.watched_by, ["cgroup"], "{}", sock.raw);
    // The kernel side knew the new cgroup by itself: the sweep never had to add it.
    let missed = "did not report this target";
    assert!(
        !a.proc.stderr_text().contains(missed),
        "the cgroup_mkdir tracepoint missed the unit's cgroup:\n{}",
        a.proc.stderr_text()
    );
    blackhole_is_killed(lab, a, port, KILL_WITHIN)?;
    let owner = format!(
        "{}/{}",
        sock.owner_comm.as_deref().unwrap_or("?"),
        sock.owner_pid.unwrap_or(0)
    );
    kernel::report(
        &features::CONNECT_HOOKS,
        &format!(
            "connection {n} of the unit: SOURCE `sock_ops`, OWNER `{owner}`, watched_by cgroup"
        ),
    );
    kernel::report(
        &features::CGROUP_TRACEPOINTS,
        &format!("the unit's cgroup, made after the agent started, was a target at connection {n}"),
    );
    Ok(())
}

/// (a) `systemctl restart kubelet`: a new cgroup, and its connection is watched and healed.
#[test]
fn restart_recreates_the_cgroup_and_the_new_connection_is_watched() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::start(&m, &lab, false)?;
    assert_eq!(
        m.prop(UNIT, "ControlGroup")?,
        format!(
            "/{}",
            kubelet_unit::cgroup_dir(&m)
                .strip_prefix(lifeline_tests::cgroup2_mount()?)?
                .display()
        ),
        "the test targets another cgroup than the unit's own"
    );
    let a = agent_for_unit(&lab, &m)?;
    let first = wait_connection(&m, 1)?;
    wait_watched(&a, first, Duration::from_secs(10))?;
    let before = inode(&m)?;

    m.systemctl(&["restart", UNIT])?;
    assert_ne!(
        inode(&m)?,
        before,
        "systemd did not re-create the unit's cgroup"
    );
    // The re-created cgroup is the target now. Asked before the black hole: after the kill the
    // client may exit and its unit's cgroup go away, which status then rightly shows as
    // "waiting" (the 6.1 guest of the kernel matrix got there first).
    wait_until(
        "the re-created cgroup shown present",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || Ok((a.status()?.target_state(UNIT) == Some("present")).then_some(())),
    )?;
    nth_connection_is_protected(&lab, &m, &a, 2)?;
    Ok(())
}

/// (c) lifeline starts before the unit has ever run: ready, the target shown as waiting, and
/// the unit's first connection is watched by `sock_ops` from its start.
#[test]
fn started_before_the_unit_exists_waits_then_watches_its_first_connection() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::install(&m, &lab, false)?;
    assert!(!kubelet_unit::cgroup_dir(&m).exists());
    let a = agent_for_unit(&lab, &m)?;
    let st = a.status()?;
    assert_eq!(st.target_state(UNIT), Some("waiting"), "{:?}", st.targets);
    assert!(
        a.status_table()?.contains("waiting"),
        "{}",
        a.status_table()?
    );

    kubelet_unit::start_installed(&m)?;
    nth_connection_is_protected(&lab, &m, &a, 1)?;
    let appeared = a.log().iter().any(|(_, v)| {
        v.pointer("/fields/event")
            .and_then(serde_json::Value::as_str)
            == Some("target-appeared")
    });
    assert!(
        appeared,
        "no target-appeared log line:\n{}",
        a.proc.stderr_text()
    );
    Ok(())
}

/// (d) the unit stopped for 30 s and started again: shown as waiting meanwhile, then its
/// new connection is watched from its start and healed.
#[test]
fn stopped_for_thirty_seconds_then_started_is_watched_again() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::start(&m, &lab, false)?;
    let a = agent_for_unit(&lab, &m)?;
    wait_watched(&a, wait_connection(&m, 1)?, Duration::from_secs(10))?;

    m.systemctl(&["stop", UNIT])?;
    wait_until(
        "the target shown as waiting",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || Ok((a.status()?.target_state(UNIT) == Some("waiting")).then_some(())),
    )?;
    std::thread::sleep(Duration::from_secs(30));
    kubelet_unit::start_installed(&m)?;
    nth_connection_is_protected(&lab, &m, &a, 2)?;
    Ok(())
}
