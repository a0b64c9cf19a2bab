//! One agent per node across the two ways to install it (issue 34, item 4): the pod takes its
//! lock in the node's /run/lifeline (a hostPath), the directory the packaged unit's
//! `RuntimeDirectory=lifeline` makes, so a unit started beside the pod is refused at once
//! with one line naming the pod's agent, and a pod started beside the unit likewise. The
//! unit's agent is the lab's `lifeline run` in the node's namespace with the lab's directory
//! for the node's /run/lifeline bound over /run/lifeline in its mount namespace.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use lifeline_tests::infra::manifest::Pod;
use lifeline_tests::infra::podman::Podman;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, AgentArgs, Proc, unique_name};

use super::strs;
use crate::container::lab_node::LabNode;

const REFUSED: &str = "another lifeline agent is already running in this network namespace";

/// The node's agent as `lifeline.service` runs it: its lock directory is the node's.
fn unit_agent(s: &Setup, node: &LabNode) -> Result<Agent> {
    // The mount point the bind needs; the agent makes the same directory itself.
    std::fs::create_dir_all("/run/lifeline")?;
    let args = AgentArgs {
        binds: vec![(node.run_dir(), PathBuf::from("/run/lifeline"))],
        ..AgentArgs::default()
    };
    Agent::start_in(&s.lab.client, &[s.cgroup.path()], &args)
}

/// While the pod runs (its agent `pod_agent`), the unit's agent ends at once, naming it.
pub(crate) fn host_agent_refused(s: &Setup, node: &LabNode, pod_agent: u32) -> Result<()> {
    let mut unit = unit_agent(s, node)?;
    let status = unit
        .proc
        .wait_timeout(Duration::from_secs(30))
        .context("the unit's agent kept running beside the pod")?;
    let err = unit.proc.stderr_text();
    eprintln!("the unit beside the pod: {status}: {}", err.trim());
    ensure!(!status.success(), "{err}");
    ensure!(
        err.contains(REFUSED) && err.contains(&format!("(pid {pod_agent}, ")),
        "{err}"
    );
    Ok(())
}

/// While the unit's agent runs, the pod's ends at once, naming it.
pub(crate) fn pod_refused(podman: &Podman, pod: &Pod, s: &Setup, node: &LabNode) -> Result<()> {
    let mut unit = unit_agent(s, node)?;
    unit.wait_ready(Duration::from_mins(1))?;
    let name = unique_name("two");
    let mut args = node.args(pod, &name, None, &pod.command)?;
    args.insert(1, "--rm".into());
    let mut p = Proc::spawn("podman run beside the unit", podman.command(&strs(&args)))?;
    let Some(status) = p.wait_timeout(Duration::from_mins(1)) else {
        p.kill();
        let _ = podman.run(&["rm", "-f", &name]);
        bail!("the pod kept running beside the unit's agent");
    };
    let err = p.stderr_text();
    eprintln!("the pod beside the unit: {status}: {}", err.trim());
    ensure!(!status.success(), "{err}");
    ensure!(
        err.contains(REFUSED) && err.contains(&format!("(pid {}, ", unit.proc.pid())),
        "{err}"
    );
    ensure!(
        unit.proc.try_status().is_none(),
        "the unit's agent ended: {}",
        unit.proc.stderr_text()
    );
    Ok(())
}
