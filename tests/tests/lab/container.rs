//! The `DaemonSet` in a real container runtime. `packaging/daemonset.yaml` is the
//! input (read, not copied: `tests/src/infra/manifest/`), mapped to podman + runc as kubelet
//! would run it (`tests/src/infra/pod.rs` says how, setting by setting), with the image `cargo
//! xtask image` built. The lab stands in for the node: the pod's host network is the lab's
//! client namespace, its hostPaths are the machine's cgroup2 hierarchy, a tracefs mount of
//! the lab's and (for the `restart_unit` opt-in only) a systemd manager's bus socket as
//! /run/dbus, a directory of the lab's as the node's /run/lifeline; the `ConfigMap` is the
//! manifest's, with its `cgroup` pointed at the lab client's cgroup on the host and its
//! `endpoint` at the lab's server (the lab has no kubelet whose kubeconfig would name it).
//!
//! The manifest grants no `SYS_PTRACE`, no host bus, no token (`steps/hardening.rs`). Under
//! `RuntimeDefault` `check` names the seccomp filter (not a capability); without
//! `no_new_privs` runc cannot start the pod with the shipped profile; the documented
//! `restart_unit` opt-in reaches systemd. With the manifest as shipped `check` passes inside
//! the pod (every hook attaches, the keepalive news fallback included) and predicts run's
//! mounts; a socket older than the pod is watched without its owner, said in one warning;
//! inside the pod the profile refuses `unshare`, a namespace `clone`, `mount`, `ptrace` and
//! a `NETLINK_ROUTE` socket (test d: the same calls without the profile get the kernel's own
//! answer); `run` kills a black-holed connection of a process on the host, the probes answer,
//! the metric counts the kill, and a stop leaves nothing attached.

mod lab_node;
mod steps;

use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::infra::manifest::{Pod, Seccomp};
use lifeline_tests::infra::paths::workspace;
use lifeline_tests::infra::podman::Podman;
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::scenarios::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::{Agent, Proc, require_root, unique_name};
use steps::hardening;

#[test]
fn the_daemonset_pod_heals_a_host_connection() -> Result<()> {
    require_root();
    let manifest = workspace().join("packaging/daemonset.yaml");
    let pod = Pod::read(&manifest)?;
    hardening::assert_least_privilege(&pod)?;
    let podman = Podman::new()?;
    podman.load(&steps::image_archive(&pod)?, &pod.image)?;

    let s = Setup::new()?;
    let m = UserManager::start()?;
    // The restart_unit opt-in's unit, on the lab's "system bus" (hostPath /run/dbus).
    m.install("kubelet.service", "[Service]\nExecStart=/bin/sleep 600\n")?;
    std::os::unix::fs::symlink("bus", m.dir().join("system_bus_socket"))?;
    let lab_node = lab_node::LabNode::new(&pod, &s, &m)?;

    // RuntimeDefault: the capabilities are there, the runtime's filter is what refuses.
    let out = lab_node.check_once(&podman, &pod, &Seccomp::RuntimeDefault)?;
    steps::assert_seccomp_named(&out)?;
    // The profile needs no_new_privs: without it runc installs it before it drops
    // capabilities and changes user, and those calls are refused.
    let mut no_nnp = pod.clone();
    no_nnp.no_new_privileges = false;
    let (code, text) = lab_node.run_once(&podman, &no_nnp, &pod.seccomp, &steps::as_check(&pod))?;
    eprintln!("without no_new_privs: {code:?}\n{text}");
    assert!(
        code != Some(0)
            && text.to_lowercase().contains("operation not permitted")
            && !text.contains("CHECK"),
        "{text}"
    );
    // The documented opt-in: restarts through the host's systemd, `check` reaches it.
    let opted = hardening::with_restart_opt_in(&pod, &std::fs::read_to_string(&manifest)?)?;
    let (code, table) = lab_node.check_once(&podman, &opted, &pod.seccomp)?;
    assert!(
        code == Some(0)
            && steps::row(&table, "systemd unit").is_some_and(|r| r.starts_with("pass")),
        "{table}"
    );

    // A connection older than the pod: without SYS_PTRACE its owner cannot be named.
    let older = s.heartbeat_client(&[])?;
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
    // What is lost without SYS_PTRACE, said in one line: the older socket is watched (by
    // its cgroup) without a known owner.
    let unowned = "sockets older than the agent have no known owner";
    assert!(
        agent
            .messages("WARN")
            .iter()
            .any(|m| m.starts_with(unowned)),
        "{}",
        agent.proc.stderr_text()
    );
    drop(older);

    // `kubectl exec ds/lifeline -- lifeline check ...`: passes, and says what run did.
    let table = steps::check_in_pod(&podman, &pod, &name)?;
    steps::assert_prediction(&table, &agent)?;
    // Test d: inside the running pod the profile refuses the escapes; issue 34's test e:
    // and the ioctls that would change the node's links and routes.
    let profile_filters = hardening::assert_refused(&podman, &lab_node, &pod, &name)?;
    // The agent narrows what the profile cannot (its own pid): one filter more.
    let agent_pid = steps::agent_pid(&s.lab.client.path(), "run")?;
    let agent_filters = steps::seccomp_filters(agent_pid)?;
    eprintln!(
        "seccomp filters: the pod's agent {agent_filters}, another process of the pod {profile_filters}"
    );
    assert_eq!(agent_filters, profile_filters + 1);
    // One agent per node: a lifeline.service started beside the pod is refused at once.
    steps::exclusion::host_agent_refused(&s, &lab_node, agent_pid)?;

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
    // And the other way round: a pod started beside a running unit is refused at once.
    steps::exclusion::pod_refused(&podman, &pod, &s, &lab_node)?;
    Ok(())
}
