//! The real `lifeline run`, started in the lab's client namespace and watched through its
//! JSON log (stderr) and its status socket.

use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::cgroup::Cgroup;
use crate::decision::Decision;
use crate::lab::Lab;
use crate::proc::Proc;
use crate::util::{TempDir, wait_until};

/// How to start the agent. The defaults are the lab's: stall timeout 4 s.
#[derive(Clone, Debug)]
pub struct AgentArgs {
    /// `--stall-timeout`; None leaves the agent's default (10 s).
    pub stall_timeout: Option<String>,
    pub ports: String,
    pub extra: Vec<String>,
    /// `--status-socket`; None: a fresh path in the agent's own temporary directory.
    pub status_socket: Option<PathBuf>,
    /// `(file, over)`: bind-mounted in the agent's private mount namespace before it starts
    /// (a test-owned /etc/hosts or /etc/resolv.conf; the host's files are never touched).
    pub binds: Vec<(PathBuf, PathBuf)>,
    /// The agent's binary; None: `paths::lifeline()` (`LIFELINE_BIN`). A test that runs it
    /// through a wrapper (`setpriv` with fewer capabilities) names the wrapper here: the
    /// environment is shared by every test of the lab binary, so no test may change it.
    pub bin: Option<PathBuf>,
}

impl Default for AgentArgs {
    fn default() -> Self {
        Self {
            stall_timeout: Some("4s".into()),
            ports: "6443".into(),
            extra: Vec::new(),
            status_socket: None,
            binds: Vec::new(),
            bin: None,
        }
    }
}

/// A running agent. Drop: SIGTERM, a bounded wait, then SIGKILL.
pub struct Agent {
    pub proc: Proc,
    pub status_socket: PathBuf,
    bin: PathBuf,
    _dir: TempDir,
}

impl Agent {
    /// `Agent::start_with` with the lab defaults.
    ///
    /// # Errors
    /// As `start_with`.
    pub fn start(lab: &Lab, cgroup: &Cgroup) -> Result<Self> {
        Self::start_with(lab, cgroup, &AgentArgs::default())
    }

    /// Starts `lifeline run --log json --cgroup CG ...` in the client namespace, in a private
    /// mount namespace (it mounts bpffs/tracefs when missing; those mounts must not leak).
    ///
    /// # Errors
    /// When the binary is missing or cannot start.
    pub fn start_with(lab: &Lab, cgroup: &Cgroup, args: &AgentArgs) -> Result<Self> {
        Self::start_targets(lab, &[cgroup.path()], args)
    }

    /// `start_with` for any cgroup targets: one `--cgroup` per path (which may not exist
    /// yet); none when `args.extra` names the targets itself (`--endpoint-clients`, `--comm`).
    ///
    /// # Errors
    /// When the binary is missing or cannot start.
    pub fn start_targets(
        lab: &Lab,
        cgroups: &[&std::path::Path],
        args: &AgentArgs,
    ) -> Result<Self> {
        Self::start_in(&lab.client, cgroups, args)
    }

    /// `start_targets` in any network namespace (a fleet bench runs one agent per node).
    ///
    /// # Errors
    /// When the binary is missing or cannot start.
    pub fn start_in(
        ns: &crate::netns::NetNs,
        cgroups: &[&std::path::Path],
        args: &AgentArgs,
    ) -> Result<Self> {
        let bin = match &args.bin {
            Some(bin) => bin.clone(),
            None => crate::paths::lifeline()?,
        };
        let dir = TempDir::new()?;
        let status_socket = args
            .status_socket
            .clone()
            .unwrap_or_else(|| dir.path().join("status.sock"));
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", ns.path())).args([
            "--",
            "unshare",
            "--mount",
            "--propagation",
            "private",
        ]);
        if !args.binds.is_empty() {
            // Pairs up to `--`, then the agent's command line; exec keeps the pid.
            let script = r#"while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 1; shift 2; done; shift; exec "$@""#;
            cmd.args(["sh", "-c", script, "sh"]);
            for (file, over) in &args.binds {
                cmd.arg(file).arg(over);
            }
            cmd.arg("--");
        }
        cmd.arg(&bin).args(["run", "--log", "json"]);
        for cg in cgroups {
            cmd.arg("--cgroup").arg(cg);
        }
        cmd.args(["--ports", &args.ports]);
        if let Some(t) = &args.stall_timeout {
            cmd.args(["--stall-timeout", t]);
        }
        cmd.arg("--status-socket")
            .arg(&status_socket)
            .args(&args.extra);
        let proc = Proc::spawn("lifeline", cmd)?;
        Ok(Self {
            proc,
            status_socket,
            bin,
            _dir: dir,
        })
    }

    /// An agent started some other way (in a container: `proc` is `podman run`, attached),
    /// read through its JSON log on `proc`'s stderr and its status socket, seen from here.
    ///
    /// # Errors
    /// When there is no `lifeline` binary here to read the status with.
    pub fn from_proc(proc: Proc, status_socket: PathBuf) -> Result<Self> {
        Ok(Self {
            proc,
            status_socket,
            bin: crate::paths::lifeline()?,
            _dir: TempDir::new()?,
        })
    }

    /// Waits for the `ready` event (every probe attached).
    ///
    /// # Errors
    /// When the agent exits or is not ready in time; the error carries its stderr.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let events = self.proc.stderr.clone();
        let res = wait_until(
            "the agent's ready event",
            timeout,
            Duration::from_millis(20),
            || {
                let ready = events
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .iter()
                    .any(|l| {
                        serde_json::from_str::<Value>(&l.text).is_ok_and(|v| {
                            v.pointer("/fields/event").and_then(Value::as_str) == Some("ready")
                        })
                    });
                if ready {
                    return Ok(Some(()));
                }
                if let Some(st) = self.proc.try_status() {
                    anyhow::bail!("lifeline exited ({st}) before it was ready");
                }
                Ok(None)
            },
        );
        res.map_err(|e| anyhow::anyhow!("{e:#}; lifeline's stderr:\n{}", self.proc.stderr_text()))
    }

    /// The parsed JSON log lines so far, with the time the test read each one.
    #[must_use]
    pub fn log(&self) -> Vec<(u64, Value)> {
        let lines = self
            .proc
            .stderr
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default();
        lines
            .iter()
            .filter_map(|l| Some((l.at_ms, serde_json::from_str(&l.text).ok()?)))
            .collect()
    }

    /// The messages of the log lines at `level` so far ("INFO", "WARN", ...).
    #[must_use]
    pub fn messages(&self, level: &str) -> Vec<String> {
        self.log()
            .into_iter()
            .filter(|(_, v)| v.get("level").and_then(Value::as_str) == Some(level))
            .filter_map(|(_, v)| Some(v.pointer("/fields/message")?.as_str()?.to_owned()))
            .collect()
    }

    /// Every decision event so far (`target == "lifeline::decision"`).
    #[must_use]
    pub fn decisions(&self) -> Vec<Decision> {
        self.log()
            .into_iter()
            .filter(|(_, v)| v.get("target").and_then(Value::as_str) == Some("lifeline::decision"))
            .map(|(at, v)| Decision::from_json(at, v))
            .collect()
    }

    /// `lifeline status --json` against this agent's socket.
    ///
    /// # Errors
    /// When the command fails or prints something that is not the documented JSON.
    pub fn status_json(&self) -> Result<Value> {
        let text = self.status_json_text()?;
        serde_json::from_str(&text)
            .with_context(|| format!("lifeline status --json printed {text:?}"))
    }

    /// What `lifeline status --json` printed, unparsed (to time the command alone).
    ///
    /// # Errors
    /// When the command fails.
    pub fn status_json_text(&self) -> Result<String> {
        self.status_cmd(&["--json"])
    }

    /// `lifeline status`: the table an operator reads.
    ///
    /// # Errors
    /// When the command fails.
    pub fn status_table(&self) -> Result<String> {
        self.status_cmd(&[])
    }

    fn status_cmd(&self, extra: &[&str]) -> Result<String> {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("status")
            .args(extra)
            .arg("--status-socket")
            .arg(&self.status_socket);
        let out = crate::cmd::output(&mut cmd)?;
        anyhow::ensure!(
            out.status.success(),
            "lifeline status failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The typed status.
    ///
    /// # Errors
    /// As `status_json`.
    pub fn status(&self) -> Result<crate::status::Status> {
        crate::status::Status::from_json(&self.status_json()?)
    }

    /// The status once the first sweep is published (until then the agent answers an
    /// all-zero snapshot, `stall_timeout_ms` included), within 10 s.
    ///
    /// # Errors
    /// As `status`, or when no sweep is published in time.
    pub fn swept_status(&self) -> Result<crate::status::Status> {
        wait_until(
            "the agent's first sweep in its status",
            Duration::from_secs(10),
            Duration::from_millis(100),
            || Ok(self.status().ok().filter(|s| s.stall_timeout_ms > 0)),
        )
    }

    /// SIGTERM and a bounded wait (10 s); SIGKILL if it did not stop. Returns how it ended.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.proc.signal(libc::SIGTERM);
        self.proc.wait_timeout(Duration::from_secs(10)).or_else(|| {
            eprintln!("lab: lifeline did not stop within 10 s of SIGTERM; killing it");
            self.proc.kill()
        })
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop();
    }
}
