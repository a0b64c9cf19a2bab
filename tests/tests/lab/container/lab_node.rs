//! The node the pod runs on: the lab's namespace, cgroups, tracefs and bus as its host, and
//! the directories kubelet would keep (the seccomp profiles, the pod's volumes). One thing
//! the manifest does not have: the lab's tools, read-only at `/lab` in every container
//! (the syscall helper `podman exec` runs in the pod; the image is FROM scratch).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::infra::manifest::{Pod, Seccomp};
use lifeline_tests::infra::pod::{Node, run_args};
use lifeline_tests::infra::podman::Podman;
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::infra::tracefs::LabTracefs;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{NetNs, Proc, TempDir, cgroup2_mount, infra::pod_syscalls, unique_name};

use crate::container::steps::{as_check, strs};

/// Where the lab's tools are in a container.
pub(super) const TOOLS: &str = "/lab";
/// A link of the node nobody uses, with a route on it (203.0.113.0/24): what the pod must
/// not be able to change. A bridge without ports: the lab's kernel has no dummy driver.
pub(super) const DEVICE: &str = "lldev0";

/// The API server the pod's `ConfigMap` names, on a host of its own on the lab's bridge.
const API: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 51, 100, 3)), 443);

/// The node the pod runs on. Fields drop in order: the API server, the volumes' directory,
/// then tracefs.
pub(super) struct LabNode {
    _api: (Proc, NetNs),
    node: Node,
    /// The lab client's cgroup relative to the hierarchy's root, as the `ConfigMap` names one.
    cgroup: String,
    /// Mounted read-only at `TOOLS` in the containers.
    tools: PathBuf,
    /// The node's network namespace, by name.
    ns: String,
    _dir: TempDir,
    _tracefs: LabTracefs,
}

impl LabNode {
    pub(super) fn new(pod: &Pod, s: &Setup, m: &UserManager) -> Result<Self> {
        let tracefs = LabTracefs::new()?;
        let dir = TempDir::new()?;
        // The node's hosts file: the lab's own, never the machine's.
        let hosts = dir.path().join("hosts");
        std::fs::write(&hosts, "127.0.0.1 localhost\n")?;
        // The node's /run/lifeline, root's alone as the unit's RuntimeDirectory makes it.
        let run = dir.path().join("run-lifeline");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&run)
            .context("the node's /run/lifeline")?;
        let host_paths = BTreeMap::from([
            ("/etc/hosts".to_owned(), hosts),
            ("/run/lifeline".to_owned(), run),
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
            let packaged = lifeline_tests::infra::paths::workspace().join("packaging/seccomp");
            std::fs::copy(packaged.join(name), dest)?;
        }
        let cgroup = s.cgroup.path().strip_prefix(cgroup2_mount()?)?;
        let api_host = s.lab.add_host(
            "api",
            Ipv4Addr::new(198, 51, 100, 3),
            "2001:db8::3".parse()?,
        )?;
        let bin = lifeline_tests::infra::paths::fixture("lab-server")?;
        let listen = format!("--listen=0.0.0.0:{}", API.port());
        let mut server = Proc::spawn(
            "lab-server (API)",
            api_host.command(bin.to_str().context("path")?, &[&listen]),
        )?;
        server.wait_stdout("the API server to listen", Duration::from_secs(10), |l| {
            l.contains("\"listening\"")
        })?;
        let ns = s.lab.client.name().to_owned();
        s.lab
            .client
            .ip(&["link", "add", DEVICE, "type", "bridge"])?;
        s.lab.client.ip(&["link", "set", DEVICE, "up"])?;
        s.lab
            .client
            .ip(&["route", "add", "203.0.113.0/24", "dev", DEVICE])?;
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(&tools)?;
        pod_syscalls::build(&tools)?;
        Ok(Self {
            _api: (server, api_host),
            node,
            cgroup: cgroup.to_str().context("utf-8")?.to_owned(),
            tools,
            ns,
            _dir: dir,
            _tracefs: tracefs,
        })
    }

    /// `podman run` arguments for the pod with `command` in place of the manifest's.
    pub(super) fn args(
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
            // What kubelet's kubeconfig would name on a node (the lab has no kubelet): an API
            // server of its own, so the lab client's black hole is no outage of the API.
            t.insert(
                "endpoint".into(),
                toml::Value::Array(vec![toml::Value::String(API.to_string())]),
            );
            Ok(t.to_string())
        };
        let mut args = run_args(&pod, &self.node, name, seccomp, &config)?;
        let tools = format!("{}:{TOOLS}:ro", self.tools.display());
        args.splice(3..3, ["-v".to_owned(), tools]);
        Ok(args)
    }

    /// `lifeline check` with the pod's flags in a one-off container: (exit code, output).
    pub(super) fn check_once(
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
    pub(super) fn run_once(
        &self,
        podman: &Podman,
        pod: &Pod,
        seccomp: &Seccomp,
        command: &[String],
    ) -> Result<(Option<i32>, String)> {
        let mut args = self.args(pod, &unique_name("one"), Some(seccomp), command)?;
        args.insert(1, "--rm".into());
        let mut cmd = podman.command(&strs(&args));
        let out = lifeline_tests::infra::cmd::output(&mut cmd)?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok((out.status.code(), text))
    }

    /// Whether `DEVICE` is up and its route still there.
    pub(super) fn device(&self) -> Result<(bool, bool)> {
        let run = |args: &[&str]| {
            lifeline_tests::infra::cmd::run(
                std::process::Command::new("ip")
                    .arg("-n")
                    .arg(&self.ns)
                    .args(args),
            )
        };
        let link = run(&["-o", "link", "show", DEVICE])?;
        let up = link
            .split(['<', '>'])
            .nth(1)
            .is_some_and(|flags| flags.split(',').any(|f| f == "UP"));
        let route = run(&["route", "show", "dev", DEVICE])?;
        Ok((up, route.contains("203.0.113.0/24")))
    }

    /// The node's /run/lifeline, as the lab provides it.
    pub(super) fn run_dir(&self) -> PathBuf {
        self.node
            .host_paths
            .get("/run/lifeline")
            .cloned()
            .unwrap_or_default()
    }

    /// The lab path of the pod's `--status-socket` (in its /run/lifeline volume).
    pub(super) fn status_socket(&self, pod: &Pod) -> Result<PathBuf> {
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
