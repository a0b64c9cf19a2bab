//! The steps of the container test: the lab node the pod runs on, and the checks on it.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use lifeline_tests::infra::manifest::{Pod, Source};
use lifeline_tests::infra::podman::Podman;
use lifeline_tests::{Agent, Proc, cgroup2_mount};
use serde_json::Value;

/// The image `cargo xtask image` built (`LIFELINE_IMAGE`, set by `cargo xtask test`).
pub(super) fn image_archive(pod: &Pod) -> Result<PathBuf> {
    let tag = pod.image.rsplit(':').next().unwrap_or("latest");
    let path = std::env::var_os("LIFELINE_IMAGE").map_or_else(
        || {
            lifeline_tests::infra::paths::workspace()
                .join(format!("target/image/lifeline-{tag}.oci.tar"))
        },
        PathBuf::from,
    );
    ensure!(
        path.is_file(),
        "{} is missing: run `cargo xtask image`",
        path.display()
    );
    Ok(path)
}

pub(super) fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The pod's command with `check` for `run`: the same flags and config.
pub(super) fn as_check(pod: &Pod) -> Vec<String> {
    pod.command
        .iter()
        .map(|a| {
            if a == "run" {
                "check".into()
            } else {
                a.clone()
            }
        })
        .collect()
}

/// The result column and detail of a row of `check`'s table.
pub(super) fn row<'a>(table: &'a str, name: &str) -> Option<&'a str> {
    table
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map(str::trim)
}

pub(super) fn assert_seccomp_named((code, out): &(Option<i32>, String)) -> Result<()> {
    ensure!(
        *code == Some(1),
        "check passed under RuntimeDefault:\n{out}"
    );
    let privileges = row(out, "privileges").context("no privileges row")?;
    ensure!(privileges.starts_with("pass"), "{out}");
    let seccomp = row(out, "seccomp").context("no seccomp row")?;
    ensure!(
        seccomp.starts_with("fail") && seccomp.contains("seccomp filter denies bpf(2)"),
        "{out}"
    );
    let attach = row(out, "sock_ops attach").context("no attach row")?;
    ensure!(
        attach.contains("seccomp filter") && !attach.contains("needs root"),
        "{out}"
    );
    Ok(())
}

/// Cgroup v2 root attachments by program id (`bpftool cgroup show`).
pub(super) fn attached_ids() -> Result<Vec<u64>> {
    let out = Command::new("bpftool")
        .args(["-j", "cgroup", "show"])
        .arg(cgroup2_mount()?)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let v: Value = serde_json::from_str(text.trim())?;
    Ok(v.as_array()
        .map(|a| a.iter().filter_map(|p| p["id"].as_u64()).collect())
        .unwrap_or_default())
}

pub(super) mod exclusion;
pub(super) mod hardening;
mod pod_checks;
pub(super) use pod_checks::{
    assert_prediction, check_in_pod, config_duration, kill_counted, probes_healthy,
};

/// Runs `podman exec NAME cmd...`, bounded by `timeout`; its output when it succeeds.
pub(super) fn exec(
    podman: &Podman,
    name: &str,
    cmd: &[String],
    timeout: Duration,
) -> Result<String> {
    let mut args = vec!["exec", name];
    args.extend(strs(cmd));
    let mut p = Proc::spawn("podman exec", podman.command(&args))?;
    let Some(status) = p.wait_timeout(timeout) else {
        p.kill();
        bail!("{cmd:?} did not finish within {timeout:?}");
    };
    let out: Vec<String> = p.stdout_lines().into_iter().map(|l| l.text).collect();
    ensure!(
        status.success(),
        "{cmd:?}: {status}\n{}\n{}",
        out.join("\n"),
        p.stderr_text()
    );
    Ok(out.join("\n"))
}

/// Whether the agent's log has a line from `ensure` about `fstype` with `message`.
pub(super) fn logged(agent: &Agent, fstype: &str, message: &str) -> bool {
    agent.log().iter().any(|(_, v)| {
        v.pointer("/fields/fstype").and_then(Value::as_str) == Some(fstype)
            && v.pointer("/fields/message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with(message))
    })
}

/// The `ConfigMap`'s lifeline.toml, as the manifest has it.
pub(super) fn config(pod: &Pod) -> Result<toml::Table> {
    let text = pod
        .mounts
        .iter()
        .find_map(|m| match &m.source {
            Source::ConfigMap(files) => files.get("lifeline.toml"),
            _ => None,
        })
        .context("no lifeline.toml in the ConfigMap")?;
    Ok(text.parse()?)
}

/// The pid of the one `lifeline SUBCOMMAND` process in the network namespace at `netns`
/// (the pod's, seen from the host: `hostPID`).
pub(super) fn agent_pid(netns: &str, subcommand: &str) -> Result<u32> {
    use std::os::unix::fs::MetadataExt as _;
    let ns = std::fs::metadata(netns)?.ino();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let in_ns = std::fs::metadata(format!("/proc/{pid}/ns/net")).is_ok_and(|m| m.ino() == ns);
        if in_ns
            && comm.trim() == "lifeline"
            && cmdline.split(|b| *b == 0).nth(1) == Some(subcommand.as_bytes())
        {
            found.push(pid);
        }
    }
    match found.as_slice() {
        [pid] => Ok(*pid),
        _ => bail!("lifeline {subcommand} processes in {netns}: {found:?}"),
    }
}

/// `Seccomp_filters` of /proc/PID/status: how many filters the process runs under.
pub(super) fn seccomp_filters(pid: u32) -> Result<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp_filters:"))
        .and_then(|n| n.trim().parse().ok())
        .with_context(|| format!("no Seccomp_filters in /proc/{pid}/status"))
}
