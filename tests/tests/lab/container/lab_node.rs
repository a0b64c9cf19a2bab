//! The node the pod runs on: the lab's namespace, cgroups, tracefs and bus as its host, and
//! the directories kubelet would keep (the seccomp profiles, the pod's volumes). One thing
//! the manifest does not have: the lab's tools, read-only at `/lab` in every container
//! (the syscall helper `podman exec` runs in the pod; the image is FROM scratch).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use lifeline_tests::manifest::{Pod, Seccomp};
use lifeline_tests::pod::{Node, run_args};
use lifeline_tests::podman::Podman;
use lifeline_tests::scenario::Setup;
use lifeline_tests::systemd::UserManager;
use lifeline_tests::tracefs::LabTracefs;
use lifeline_tests::{TempDir, cgroup2_mount, pod_syscalls, unique_name};

use crate::container::steps::{as_check, strs};

/// Where the lab's tools are in a container.
pub const TOOLS: &str = "/lab";

/// The node the pod runs on. Fields drop in order: the volumes' directory, then tracefs.
pub struct LabNode {
    node: Node,
    /// The lab client's cgroup relative to the hierarchy's root, as the `ConfigMap` names one.
    cgroup: String,
    /// Mounted read-only at `TOOLS` in the containers.
    tools: PathBuf,
    _dir: TempDir,
    _tracefs: LabTracefs,
}

impl LabNode {
    pub fn new(pod: &Pod, s: &Setup, m: &UserManager) -> Result<Self> {
        let tracefs = LabTracefs::new()?;
        let dir = TempDir::new()?;
        // The node's hosts file: the lab's own, never the machine's.
        let hosts = dir.path().join("hosts");
        std::fs::write(&hosts, "127.0.0.1 localhost\n")?;
        let host_paths = BTreeMap::from([
            ("/etc/hosts".to_owned(), hosts),
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
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(&tools)?;
        pod_syscalls::build(&tools)?;
        Ok(Self {
            node,
            cgroup: cgroup.to_str().context("utf-8")?.to_owned(),
            tools,
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
        let mut args = run_args(&pod, &self.node, name, seccomp, &config)?;
        let tools = format!("{}:{TOOLS}:ro", self.tools.display());
        args.splice(3..3, ["-v".to_owned(), tools]);
        Ok(args)
    }

    /// `lifeline check` with the pod's flags in a one-off container: (exit code, output).
    pub fn check_once(
        &self,
        podman: &Podman,
        pod: &Pod,
        seccomp: &Seccomp,
    ) -> Result<(Option<i32>, String)> {
        let out = self.run_once(podman, pod, seccomp, &as_check(pod))?;
        eprintln!("check under {seccomp:?}:\n{}", out.1);
        Ok(out)
    }

    /// `command` in a one-off container of the pod under `seccomp`: (exit code, stdout and
    /// stderr).
    pub fn run_once(
        &self,
        podman: &Podman,
        pod: &Pod,
        seccomp: &Seccomp,
        command: &[String],
    ) -> Result<(Option<i32>, String)> {
        let mut args = self.args(pod, &unique_name("one"), Some(seccomp), command)?;
        args.insert(1, "--rm".into());
        let mut cmd = podman.command(&strs(&args));
        let out = lifeline_tests::cmd::output(&mut cmd)?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
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
