//! A stand-in for kubelet as the agent's discovery sees it: a process whose comm is
//! `kubelet`, with `--kubeconfig FILE` on its command line, in a network namespace. The
//! agent trusts it only as root in kubelet's cgroup (one of its `--cgroup` targets): `start`
//! makes such a one, `start_as` any other.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::cgroup::Cgroup;
use crate::netns::NetNs;
use crate::proc::Proc;
use crate::util::{TempDir, wait_until};

/// A copy of bash named `kubelet`. It only waits, with bash's `read -t` on a FIFO nobody
/// writes: it spawns no child, ends by itself after 120 s, and is killed on drop. When its
/// kubeconfig's server is a loopback address (a node-local proxy's) it holds a connection
/// there as kubelet does (bash's `/dev/tcp`), re-dialled within a second when it ends or
/// cannot be made, for at most 300 s: the agent finds the proxy from that connection.
pub struct FakeKubelet {
    pub proc: Proc,
    /// The kubeconfig on its command line (absolute).
    pub kubeconfig: PathBuf,
    _dir: TempDir,
}

impl FakeKubelet {
    /// Starts a trusted one: root, in `cgroup` (the agent's target), in `ns`, with a
    /// kubeconfig holding `kubeconfig`; waits until its comm is `kubelet`.
    ///
    /// # Errors
    /// When the files cannot be made or the process does not start.
    pub fn start(ns: &NetNs, cgroup: &Cgroup, kubeconfig: &str) -> Result<Self> {
        Self::start_as(ns, Some(cgroup), None, kubeconfig)
    }

    /// Starts one in `ns`, in `cgroup` (None: the test's own), as `uid` (None: root; else
    /// through `setpriv`, group the same number, no supplementary groups).
    ///
    /// # Errors
    /// When the files cannot be made or the process does not start.
    pub fn start_as(
        ns: &NetNs,
        cgroup: Option<&Cgroup>,
        uid: Option<u32>,
        kubeconfig: &str,
    ) -> Result<Self> {
        Self::start_opts(ns, (cgroup, uid), kubeconfig, true)
    }

    fn start_opts(
        ns: &NetNs,
        (cgroup, uid): (Option<&Cgroup>, Option<u32>),
        kubeconfig: &str,
        dials: bool,
    ) -> Result<Self> {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = TempDir::new()?;
        let bin = dir.path().join("kubelet");
        std::fs::copy("/bin/bash", &bin).context("copy /bin/bash")?;
        let fifo = dir.path().join("never-written");
        crate::cmd::run(Command::new("mkfifo").arg(&fifo))?;
        let file = dir.path().join("kubelet.conf");
        std::fs::write(&file, kubeconfig)?;
        let s = |p: &Path| p.to_str().map(str::to_owned).context("utf-8 path");
        let (bin_s, fifo_s, file_s) = (s(&bin)?, s(&fifo)?, s(&file)?);
        let script = r#"if [ -z "$KUBELET_DIALS" ]; then read -t 120 _ <> "$1"; exit; fi
while [ "$SECONDS" -lt 300 ]; do
  read -t 120 _ <> "/dev/tcp/$KUBELET_DIALS" 2>/dev/null || read -t 1 _ <> "$1"
done"#;
        let mut argv: Vec<String> = Vec::new();
        if let Some(uid) = uid {
            // Another user opens the FIFO and runs the copy of bash.
            std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o666))?;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
            argv.extend([
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--clear-groups".into(),
                "--".into(),
                bin_s.clone(),
            ]);
        }
        argv.extend(["-c", script, "kubelet", &fifo_s, "--kubeconfig", &file_s].map(String::from));
        let program = if uid.is_some() {
            "setpriv"
        } else {
            bin_s.as_str()
        };
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut cmd = match cgroup {
            Some(cg) => cg.command_in_netns(ns.name(), program, &argv),
            None => ns.command(program, &argv),
        };
        if let Some(dials) = loopback_server(kubeconfig).filter(|_| dials) {
            cmd.env("KUBELET_DIALS", dials);
        }
        let mut proc = Proc::spawn("fake kubelet", cmd)?;
        let comm = format!("/proc/{}/comm", proc.pid());
        wait_until(
            "the fake kubelet's exec",
            Duration::from_secs(5),
            Duration::from_millis(10),
            || {
                ensure!(
                    proc.try_status().is_none(),
                    "the fake kubelet exited: {}",
                    proc.stderr_text()
                );
                let comm = std::fs::read_to_string(&comm).unwrap_or_default();
                Ok((comm == "kubelet\n").then_some(()))
            },
        )?;
        Ok(Self {
            proc,
            kubeconfig: file,
            _dir: dir,
        })
    }

    /// Replaced by one with the same kubeconfig that dials nothing (a restart of kubelet):
    /// a test's own client then plays kubelet's connection alone.
    ///
    /// # Errors
    /// As `start`.
    pub fn quiet(ns: &NetNs, cgroup: &Cgroup, kubeconfig: &str) -> Result<Self> {
        Self::start_opts(ns, (Some(cgroup), None), kubeconfig, false)
    }

    /// How the agent names this kubeconfig's source: `kubelet pid N --kubeconfig FILE`.
    #[must_use]
    pub fn source(&self) -> String {
        format!(
            "kubelet pid {} --kubeconfig {}",
            self.proc.pid(),
            self.kubeconfig.display()
        )
    }
}

/// `HOST/PORT` (bash's `/dev/tcp` path) of the kubeconfig's server when it is loopback.
fn loopback_server(kubeconfig: &str) -> Option<String> {
    let url = kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: https://"))?;
    let (host, port) = url.trim_end_matches('/').rsplit_once(':')?;
    let ip: std::net::IpAddr = host.trim_matches(['[', ']']).parse().ok()?;
    ip.is_loopback().then(|| format!("{ip}/{port}"))
}

/// A kubeconfig with one cluster whose server is `server` (a URL).
#[must_use]
pub fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: AAAA\n    server: {server}\n  name: default-cluster\ncurrent-context: default\n"
    )
}
