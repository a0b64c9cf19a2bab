//! Checks made on the running pod: its probes, `check` inside it, the metric of the kill.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::infra::manifest::Pod;
use lifeline_tests::infra::podman::Podman;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, parse_duration};

use super::{config, exec, logged, row};

/// The readiness and liveness probes, run as kubelet runs exec probes, within their timeouts.
pub(crate) fn probes_healthy(podman: &Podman, pod: &Pod, name: &str) -> Result<()> {
    for (what, p) in [("readiness", &pod.readiness), ("liveness", &pod.liveness)] {
        exec(podman, name, &p.command, Duration::from_secs(p.timeout_s))
            .with_context(|| format!("the {what} probe"))?;
    }
    Ok(())
}

/// `lifeline check` with the pod's flags inside the running pod: it passes; its table.
pub(crate) fn check_in_pod(podman: &Podman, pod: &Pod, name: &str) -> Result<String> {
    let cmd = super::as_check(pod);
    let table = exec(podman, name, &cmd, Duration::from_mins(1))?;
    eprintln!("check in the pod:\n{table}");
    for name in [
        "privileges",
        "seccomp",
        "signals",
        "cgroup2",
        "target cgroup",
        "sock_ops attach",
        "cgroup tracepoints",
        "unanswered probes",
        "bpf_setsockopt",
        "sock_ops watch",
        "SOCK_DESTROY",
    ] {
        let r = row(&table, name).with_context(|| format!("no row {name}:\n{table}"))?;
        ensure!(r.starts_with("pass"), "row {name}:\n{table}");
    }
    ensure!(
        row(&table, "seccomp").is_some_and(|r| r.contains("a seccomp filter")),
        "{table}"
    );
    // Every row, not only those: the profile's argument filters refuse nothing `check` does.
    let not_passed: Vec<&str> = table
        .lines()
        .filter(|l| l.contains(" warn ") || l.contains(" fail "))
        .collect();
    ensure!(
        not_passed.is_empty(),
        "rows not passed in the pod:\n{table}"
    );
    Ok(table)
}

/// What `check` said of bpffs and tracefs is what `run` did in the same pod.
pub(crate) fn assert_prediction(table: &str, agent: &Agent) -> Result<()> {
    for (name, fstype) in [("bpffs", "bpf"), ("tracefs", "tracefs")] {
        let r = row(table, name).with_context(|| format!("no row {name}"))?;
        let mounted = logged(agent, fstype, "mounted (it was missing)");
        let failed = logged(agent, fstype, "not mounted, and could not mount it")
            || logged(agent, fstype, "could not mount");
        let said = if r.contains("`lifeline run` mounts it") {
            (true, false)
        } else if r.contains("cannot mount it") {
            (false, true)
        } else {
            ensure!(r.contains("mounted at"), "row {name}: {r}");
            (false, false)
        };
        ensure!(
            said == (mounted, failed),
            "check said `{r}`, run logged mounted={mounted} failed={failed}:\n{}",
            agent.proc.stderr_text()
        );
    }
    Ok(())
}

/// A duration key of the `ConfigMap`'s lifeline.toml.
pub(crate) fn config_duration(pod: &Pod, key: &str) -> Result<Duration> {
    let t = config(pod)?;
    parse_duration(
        t.get(key)
            .and_then(|v| v.as_str())
            .context(key.to_owned())?,
    )
}

/// `lifeline_kills_total` at the `ConfigMap`'s metrics address (in the pod's network) is 1.
pub(crate) fn kill_counted(pod: &Pod, s: &Setup) -> Result<()> {
    let t = config(pod)?;
    let addr: SocketAddr = t
        .get("metrics_addr")
        .and_then(|v| v.as_str())
        .context("metrics_addr")?
        .parse()?;
    let (_, _, body) = lifeline_tests::assertions::metrics::scrape(&s.lab.client.path(), addr)?;
    let samples = lifeline_tests::assertions::metrics::parse(&body)?;
    let kills = samples.get("lifeline_kills_total").copied();
    ensure!(
        kills == Some(1.0),
        "lifeline_kills_total {kills:?}:\n{body}"
    );
    Ok(())
}
