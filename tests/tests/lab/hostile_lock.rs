//! Hostile neighbour (a): the agent lock cannot be squatted. Before lifeline starts, an
//! unprivileged user (uid 65534, `lab-squatter`) in the node's network namespace binds the
//! abstract name the lock used to be (`@lifeline/agent`) and tries to make the lock's
//! directory and file; it can make neither, and lifeline starts, becomes ready and answers
//! `status` while the squatter still holds everything it got.

use std::os::unix::fs::MetadataExt as _;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::infra::paths::fixture;
use lifeline_tests::{Agent, Cgroup, Lab, Proc, require_root};

const LOCK_DIR: &str = "/run/lifeline";

#[test]
fn a_squatter_of_the_lock_does_not_stop_the_agent() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let cgroup = Cgroup::new()?;
    // The lock lifeline will take for this namespace (lock.rs: agent.net-INODE.lock).
    let netns = std::fs::metadata(lab.client.path())?.ino();
    let lock = format!("{LOCK_DIR}/agent.net-{netns}.lock");
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", lab.client.path()))
        .arg("--")
        .arg(fixture("lab-squatter")?)
        .args([&format!("{LOCK_DIR}/"), &lock]);
    let mut squatter = Proc::spawn("lab-squatter", cmd)?;
    squatter.wait_stdout("the squatter ready", Duration::from_secs(10), |l| {
        l == "ready"
    })?;
    let said: Vec<String> = squatter
        .stdout_lines()
        .into_iter()
        .map(|l| l.text)
        .collect();
    eprintln!("squatter: {said:#?}");
    let pid = squatter.pid();
    ensure!(said[0] == format!("uid 65534 pid {pid}"), "{said:?}");
    ensure!(
        said.iter().any(|l| l == "bound @lifeline/agent"),
        "the squatter could not bind the old name, so this test proves nothing: {said:?}"
    );
    ensure!(
        !said.iter().any(|l| l.starts_with("made ")),
        "an unprivileged user made part of the lock: {said:?}"
    );

    let mut agent = Agent::start(&lab, &cgroup)?;
    agent
        .wait_ready(Duration::from_mins(1))
        .context("the agent beside the squatter")?;
    agent.status().context("status beside the squatter")?;
    ensure!(
        squatter.try_status().is_none(),
        "the squatter exited: {}",
        squatter.stderr_text()
    );
    let dir = std::fs::symlink_metadata(LOCK_DIR)?;
    ensure!(
        dir.uid() == 0 && dir.mode() & 0o022 == 0,
        "{LOCK_DIR}: uid {} mode {:o}",
        dir.uid(),
        dir.mode()
    );
    let file = std::fs::symlink_metadata(&lock).context("the agent's lock file")?;
    ensure!(
        file.uid() == 0 && file.mode() & 0o777 == 0o600,
        "{lock}: uid {} mode {:o}",
        file.uid(),
        file.mode()
    );
    drop(agent);
    ensure!(
        !std::path::Path::new(&lock).exists(),
        "{lock} left after the agent stopped"
    );
    Ok(())
}
