//! The steps of the container test: the lab node the pod runs on, and the checks on it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use lifeline_tests::manifest::{Pod, Seccomp, Source};
use lifeline_tests::pod::{Node, run_args};
use lifeline_tests::podman::Podman;
use lifeline_tests::scenario::Setup;
use lifeline_tests::systemd::UserManager;
use lifeline_tests::tracefs::LabTracefs;
use lifeline_tests::{Agent, Proc, TempDir, cgroup2_mount, unique_name};
use serde_json::Value;

/// The image `cargo xtask image` built (`LIFELINE_IMAGE`, set by `cargo xtask test`).
pub fn image_archive(pod: &Pod) -> Result<PathBuf> {
    let tag = pod.image.rsplit(':').next().unwrap_or("latest");
    let path = std::env::var_os("LIFELINE_IMAGE").map_or_else(
        || lifeline_tests::paths::workspace().join(format!("target/image/lifeline-{tag}.oci.tar")),
        PathBuf::from,
    );
    ensure!(
        path.is_file(),
        "{} is missing: run `cargo xtask image`",
        path.display()
    );
    Ok(path)
}

/// The node the pod runs on. Fields drop in order: the volumes' directory, then tracefs.
pub struct LabNode {
    node: Node,
    /// The lab client's cgroup relative to the hierarchy's root, as the `ConfigMap` names one.
    cgroup: String,
    _dir: TempDir,
    _tracefs: LabTracefs,
}

impl LabNode {
    pub fn new(pod: &Pod, s: &Setup, m: &UserManager) -> Result<Self> {
        let tracefs = LabTracefs::new()?;
        let dir = TempDir::new()?;
        let host_paths = BTreeMap::from([
            ("/sys/fs/cgroup".to_owned(), PathBuf::from("/sys/fs/cgroup")),
            ("/sys/kernel/tracing".to_owned(), tracefs.path().to_owned()),
            ("/run/dbus".to_owned(), m.dir().to_owned()),
        ]);
        let node = Node {
            netns: s.lab.client.path(),
            host_paths,
            seccomp_root: dir.path().join("seccomp"),
            scratch: dir.path().join("volumes"),
        };
        // Step 2 of the manifest's install: the packaged profile where kubelet looks.
        if let Seccomp::Localhost(rel) = &pod.seccomp {
            let name = std::path::Path::new(rel).file_name().context("profile")?;
            let dest = node.seccomp_root.join(rel);
            std::fs::create_dir_all(dest.parent().context("profile dir")?)?;
            let packaged = lifeline_tests::paths::workspace().join("packaging/seccomp");
            std::fs::copy(packaged.join(name), dest)?;
        }
        let cgroup = s.cgroup.path().strip_prefix(cgroup2_mount()?)?;
        Ok(Self {
            node,
            cgroup: cgroup.to_str().context("utf-8")?.to_owned(),
            _dir: dir,
            _tracefs: tracefs,
        })
    }

    /// `podman run` arguments for the pod with `command` in place of the manifest's.
    pub fn args(
        &self,
        pod: &Pod,
        name: &str,
        seccomp: Option<&Seccomp>,
        command: &[String],
    ) -> Result<Vec<String>> {
        let mut pod = pod.clone();
        pod.command = command.to_vec();
        let cgroup = self.cgroup.clone();
        let config = move |file: &str, text: &str| -> Result<String> {
            if file != "lifeline.toml" {
                return Ok(text.to_owned());
            }
            let mut t: toml::Table = text.parse()?;
            t.insert("cgroup".into(), toml::Value::String(cgroup.clone()));
            Ok(t.to_string())
        };
        run_args(&pod, &self.node, name, seccomp, &config)
    }

    /// `lifeline check` with the pod's flags in a one-off container: (exit code, output).
    pub fn check_once(
        &self,
        podman: &Podman,
        pod: &Pod,
        seccomp: &Seccomp,
    ) -> Result<(Option<i32>, String)> {
        let mut args = self.args(pod, &unique_name("chk"), Some(seccomp), &as_check(pod))?;
        args.insert(1, "--rm".into());
        let out = lifeline_tests::cmd::output(&mut podman.command(&strs(&args)))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("check under {seccomp:?}:\n{text}");
        Ok((out.status.code(), text))
    }

    /// The lab path of the pod's `--status-socket` (in its `emptyDir`).
    pub fn status_socket(&self, pod: &Pod) -> Result<PathBuf> {
        let i = pod.command.iter().position(|a| a == "--status-socket");
        let path = i
            .and_then(|i| pod.command.get(i + 1))
            .context("no --status-socket")?;
        let path = std::path::Path::new(path);
        let dir = path
            .parent()
            .and_then(|p| p.to_str())
            .context("socket dir")?;
        Ok(self
            .node
            .volume_dir(pod, dir)?
            .join(path.file_name().context("socket name")?))
    }
}

pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The pod's command with `check` for `run`: the same flags and config.
fn as_check(pod: &Pod) -> Vec<String> {
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
pub fn row<'a>(table: &'a str, name: &str) -> Option<&'a str> {
    table
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map(str::trim)
}

pub fn assert_seccomp_named((code, out): &(Option<i32>, String)) -> Result<()> {
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
pub fn attached_ids() -> Result<Vec<u64>> {
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

mod pod_checks;
pub use pod_checks::{
    assert_prediction, check_in_pod, config_duration, kill_counted, probes_healthy,
};

/// Runs `podman exec NAME cmd...`, bounded by `timeout`; its output when it succeeds.
pub fn exec(podman: &Podman, name: &str, cmd: &[String], timeout: Duration) -> Result<String> {
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
pub fn logged(agent: &Agent, fstype: &str, message: &str) -> bool {
    agent.log().iter().any(|(_, v)| {
        v.pointer("/fields/fstype").and_then(Value::as_str) == Some(fstype)
            && v.pointer("/fields/message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with(message))
    })
}

/// The `ConfigMap`'s lifeline.toml, as the manifest has it.
pub fn config(pod: &Pod) -> Result<toml::Table> {
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
