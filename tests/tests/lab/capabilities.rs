//! The capability set of packaging/lifeline.service, measured: the real agent, confined to
//! `CAP_BPF` + `CAP_PERFMON` + `CAP_NET_ADMIN` (bounding set; nothing else, not even
//! `CAP_SYS_ADMIN` or `CAP_SYS_RESOURCE`), attaches, detects a black hole and kills it; and
//! finds the running kubelet's kubeconfig although it may not read kubelet's /proc/PID/ns.
//! The agent runs through a `setpriv` wrapper passed to it explicitly (`AgentArgs::bin`).

use std::time::Duration;

use anyhow::{Context as _, Result};
use lifeline_tests::fixtures::confined;
use lifeline_tests::fixtures::fake_kubelet::kubeconfig;
use lifeline_tests::scenarios::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::{Agent, AgentArgs, FakeKubelet, TempDir, require_root};

#[test]
fn three_capabilities_suffice() -> Result<()> {
    require_root();
    let dir = TempDir::new()?;
    let wrapper = confined::wrapper(dir.path())?;

    let s = Setup::new()?;
    let args = AgentArgs {
        bin: Some(wrapper.clone()),
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    // Started after the agent, so the connect hook names the owner. (A socket older than
    // the agent is owned per /proc/PID/fd, which needs CAP_SYS_PTRACE to read another
    // process's fds; without it such a socket is still watched and killed, as "-/0".)
    let client = s.heartbeat_client(&[])?;
    let caps = std::fs::read_to_string(format!("/proc/{}/status", agent.proc.pid()))?;
    eprintln!(
        "{}",
        caps.lines()
            .filter(|l| l.starts_with("Cap"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    blackhole_until_killed(&s, &agent, &client, Duration::from_secs(4))?;

    // A kubelet with every capability: its /proc/PID/ns/net is out of reach without
    // CAP_SYS_PTRACE, yet it is found in this network namespace (`check` runs discovery as
    // `run` does).
    let kubelet = FakeKubelet::start(
        &s.lab.client,
        &s.cgroup,
        &kubeconfig("https://198.51.100.2:6443"),
    )?;
    let cgroup = s.cgroup.path().to_str().context("utf-8")?;
    let wrapper = wrapper.to_str().context("utf-8")?;
    let mut check = s
        .lab
        .client
        .command(wrapper, &["check", "--cgroup", cgroup]);
    let out = lifeline_tests::infra::cmd::output(&mut check)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout
        .lines()
        .find(|l| l.starts_with("endpoint "))
        .context("no endpoint row")?;
    eprintln!("{row}");
    assert!(
        row.contains(" pass ") && row.ends_with(&kubelet.source()),
        "{stdout}"
    );
    Ok(())
}
