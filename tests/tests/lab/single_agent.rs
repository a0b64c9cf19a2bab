//! Scenario (g): one agent per node (per network namespace), and a status socket
//! that never deletes what is not its own. A second agent refuses with one line naming the
//! running one, before attaching anything, and the first goes on; a `--status-socket` path
//! holding anything but a socket is refused and left intact; the socket an agent killed by
//! SIGKILL left behind is replaced by the next agent (whose lock the kernel already released).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::{Agent, AgentArgs, Cgroup, Lab, TempDir, require_root};

const READY: Duration = Duration::from_mins(1);
/// A refused agent fails before loading anything: well within this.
const REFUSAL: Duration = Duration::from_secs(20);

fn with_socket(path: PathBuf) -> AgentArgs {
    AgentArgs {
        status_socket: Some(path),
        ..AgentArgs::default()
    }
}

/// The one stderr line of an agent that must have exited with a failure.
fn refusal(agent: &mut Agent) -> Result<String> {
    let st = agent
        .proc
        .wait_timeout(REFUSAL)
        .context("the refused agent is still running")?;
    let stderr = agent.proc.stderr_text();
    eprintln!("refused agent: {st}: {stderr}");
    assert!(!st.success(), "exit {st}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "want exactly one line, got:\n{stderr}");
    assert!(lines[0].starts_with("lifeline: error: "), "{stderr}");
    Ok(lines[0].to_owned())
}

#[test]
fn a_second_agent_names_the_first_and_leaves_it_alone() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let cgroup = Cgroup::new()?;
    let mut first = Agent::start(&lab, &cgroup)?;
    first.wait_ready(READY)?;

    let mut second = Agent::start(&lab, &cgroup)?;
    let line = refusal(&mut second)?;
    let pid = first.proc.pid();
    assert!(
        line.starts_with(&format!(
            "lifeline: error: another lifeline agent is already running in this network namespace (pid {pid}, "
        )) && line.contains(" run "),
        "{line}"
    );
    assert!(
        !second.status_socket.exists(),
        "the refused agent made its socket"
    );
    assert!(first.proc.try_status().is_none(), "the first agent exited");
    first.status().context("the first agent's status")?;
    Ok(())
}

#[test]
fn a_status_socket_path_that_is_a_regular_file_is_refused_and_kept() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let cgroup = Cgroup::new()?;
    let dir = TempDir::new()?;
    let file = dir.path().join("status.sock");
    std::fs::write(&file, "not a socket\n")?;
    let mut agent = Agent::start_with(&lab, &cgroup, &with_socket(file.clone()))?;
    let line = refusal(&mut agent)?;
    assert!(
        line.contains(&format!(
            "--status-socket {} is a regular file",
            file.display()
        )),
        "{line}"
    );
    assert_eq!(std::fs::read_to_string(&file)?, "not a socket\n");
    Ok(())
}

#[test]
fn the_socket_of_a_killed_agent_is_replaced() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let cgroup = Cgroup::new()?;
    let dir = TempDir::new()?;
    let sock = dir.path().join("status.sock");
    let mut killed = Agent::start_with(&lab, &cgroup, &with_socket(sock.clone()))?;
    killed.wait_ready(READY)?;
    killed.proc.signal(libc::SIGKILL);
    killed
        .proc
        .wait_timeout(Duration::from_secs(10))
        .context("SIGKILL")?;
    assert!(sock.exists(), "SIGKILL leaves the socket file behind");

    let mut next = Agent::start_with(&lab, &cgroup, &with_socket(sock.clone()))?;
    next.wait_ready(READY)?;
    next.status().context("the new agent's status")?;
    let infos = next.messages("INFO");
    let removed = format!("removed a stale status socket at {}", sock.display());
    assert!(infos.iter().any(|m| m.starts_with(&removed)), "{infos:#?}");
    Ok(())
}
