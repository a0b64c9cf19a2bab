//! `ip netns exec` remounts /sys for the command, so no cgroup2 (nor bpffs, nor
//! tracefs) is visible to it. `lifeline run` mounts the cgroup v2 hierarchy in a mount
//! namespace of its own, where the host has it (so the host's absolute `--cgroup` paths stay
//! right), says so, and watches a target cgroup created after it started from its first SYN
//! (the tracepoint matched the path), then kills a black hole on it.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::assertions::watched::{
    assert_watched_from_start, blackhole_is_killed, wait_watched,
};
use lifeline_tests::fixtures::client::start_server;
use lifeline_tests::{
    Agent, Cgroup, Client, Lab, Proc, TempDir, cgroup2_mount, require_root, unique_name,
};

#[test]
fn run_under_ip_netns_exec_mounts_cgroup2_privately() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let mount = cgroup2_mount()?;
    let target = mount.join(unique_name("t"));
    let dir = TempDir::new()?;
    let sock = dir.path().join("status.sock");
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", lab.client.name()])
        .arg(lifeline_tests::infra::paths::lifeline()?)
        .args(["run", "--log", "json", "--cgroup"])
        .arg(&target)
        .args([
            "--ports",
            "6443",
            "--stall-timeout",
            "4s",
            "--status-socket",
        ])
        .arg(&sock);
    let mut agent = Agent::from_proc(Proc::spawn("lifeline", cmd)?, sock)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let said = agent.log().into_iter().any(|(_, v)| {
        v.pointer("/fields/message")
            .and_then(|m| m.as_str())
            .is_some_and(|m| m.starts_with("no cgroup2 mount was visible"))
            && v.pointer("/fields/at").and_then(|a| a.as_str()) == mount.to_str()
    });
    assert!(
        said,
        "no line about the private mount:\n{}",
        agent.proc.stderr_text()
    );

    let cgroup = Cgroup::create(&target)?;
    let peer = Lab::server_addr(false).to_string();
    let args = ["--peer", &peer, "heartbeat", "--interval", "1s"];
    let client = Client::start(&lab, Some(&cgroup), &args)?;
    let port = client.local_port().context("no local port")?;
    let watched = wait_watched(&agent, port, Duration::from_secs(10))?;
    assert_watched_from_start(&watched, u64::from(client.proc.pid()))?;
    let d = blackhole_is_killed(&lab, &agent, port, Duration::from_secs(9))?;
    eprintln!("{}", d.raw);
    Ok(())
}
