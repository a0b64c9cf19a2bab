//! The `DaemonSet` in a real container runtime. `packaging/daemonset.yaml` is the
//! input (read, not copied: `tests/src/manifest/`), mapped to podman + runc as kubelet
//! would run it (`tests/src/pod.rs` says how, setting by setting), with the image `cargo
//! xtask image` built. The lab stands in for the node: the pod's host network is the lab's
//! client namespace, its hostPaths are the machine's cgroup2 hierarchy, a tracefs mount of
//! the lab's and a systemd manager's bus socket as /run/dbus; the `ConfigMap` is the
//! manifest's, with its `cgroup` pointed at the lab client's cgroup on the host.
//!
//! Under `RuntimeDefault` `check` names the seccomp filter (not a capability); with the
//! manifest's Localhost profile `check` passes inside the pod and predicts run's mounts,
//! `run` kills a black-holed connection of a process on the host, the probes answer, the
//! metric counts the kill, and a stop leaves nothing attached.

mod lab_node;
mod steps;

use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::manifest::{Pod, Seccomp};
use lifeline_tests::paths::workspace;
use lifeline_tests::podman::Podman;
use lifeline_tests::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::systemd::UserManager;
use lifeline_tests::{Agent, Proc, require_root, unique_name};

#[test]
fn the_daemonset_pod_heals_a_host_connection() -> Result<()> {
    require_root();
    let pod = Pod::read(&workspace().join("packaging/daemonset.yaml"))?;
    assert!(!pod.privileged, "the DaemonSet must not be privileged");
    assert!(
        !pod.cap_add.iter().any(|c| c == "SYS_ADMIN"),
        "{:?}",
        pod.cap_add
    );
    let podman = Podman::new()?;
    podman.load(&steps::image_archive(&pod)?, &pod.image)?;

    let s = Setup::new()?;
    let m = UserManager::start()?;
    // The ConfigMap's restart_unit, on the lab's "system bus" (hostPath /run/dbus).
    m.install("kubelet.service", "[Service]\nExecStart=/bin/sleep 600\n")?;
    std::os::unix::fs::symlink("bus", m.dir().join("system_bus_socket"))?;
    let lab_node = lab_node::LabNode::new(&pod, &s, &m)?;

    // RuntimeDefault: the capabilities are there, the runtime's filter is what refuses.
    let out = lab_node.check_once(&podman, &pod, &Seccomp::RuntimeDefault)?;
    steps::assert_seccomp_named(&out)?;

    let attached_before = steps::attached_ids()?;
    let name = unique_name("pod");
    let args = lab_node.args(&pod, &name, None, &pod.command)?;
    let proc = Proc::spawn("podman run", podman.command(&steps::strs(&args)))?;
    let mut agent = Agent::from_proc(proc, lab_node.status_socket(&pod)?)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let ours: Vec<u64> = steps::attached_ids()?
        .into_iter()
        .filter(|id| !attached_before.contains(id))
        .collect();
    assert!(
        !ours.is_empty(),
        "the pod attached nothing to the cgroup v2 root"
    );
    steps::probes_healthy(&podman, &pod, &name)?;

    // `kubectl exec ds/lifeline -- lifeline check ...`: passes, and says what run did.
    let table = steps::check_in_pod(&podman, &pod, &name)?;
    steps::assert_prediction(&table, &agent)?;

    // A process on the host (the lab client in a cgroup the ConfigMap targets), after the pod.
    let client = s.heartbeat_client(&[])?;
    let stall = steps::config_duration(&pod, "stall_timeout")?;
    let report = blackhole_until_killed(&s, &agent, &client, stall)?;
    eprintln!(
        "killed {} ms after the black hole",
        report.decision.at_ms - report.fault_ms
    );
    steps::kill_counted(&pod, &s)?;
    steps::probes_healthy(&podman, &pod, &name)?;

    // The kubelet's stop: SIGTERM, the grace period, then SIGKILL.
    let grace = pod.grace_s.to_string();
    podman.run(&["stop", "-t", &grace, &name])?;
    let status = agent
        .proc
        .wait_timeout(Duration::from_secs(pod.grace_s + 10))
        .context("podman run did not end after the stop")?;
    assert!(status.success(), "the pod ended with {status}");
    assert!(
        agent.messages("INFO").iter().any(|m| m == "probe detached"),
        "{}",
        agent.proc.stderr_text()
    );
    let left: Vec<u64> = steps::attached_ids()?
        .into_iter()
        .filter(|id| ours.contains(id))
        .collect();
    assert!(left.is_empty(), "still attached after the stop: {left:?}");
    Ok(())
}
