//! A real systemd manager for the tests: `/lib/systemd/systemd --user` on a private
//! dbus-daemon, in its own cgroup (so every unit it starts lives under that cgroup and the
//! agent can watch it) and its own mount namespace (slave: host mounts such as new
//! /run/netns entries still appear in it; its own tmpfs on `/run/systemd`, where it
//! insists on finding `/run/systemd/system`, stays private: the host
//! /run is not touched).
//! Drop: SIGTERM to the manager (it stops its units), then every process of the cgroup is
//! killed and the cgroups it made (in cgroup2 and, on hybrid hosts, the v1 `name=systemd`
//! mirror) are removed, deepest first.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::infra::cgroup::Cgroup;
use crate::infra::proc::Proc;
use crate::infra::util::{TempDir, wait_until};

/// Where systemd mirrors its cgroups on hybrid hosts.
const V1_SYSTEMD: &str = "/sys/fs/cgroup/systemd";

/// Fields drop in order: manager, bus, then the cgroup (empty by then), then the runtime dir.
pub struct UserManager {
    manager: Proc,
    bus: Proc,
    pub cgroup: Cgroup,
    runtime: TempDir,
}

impl UserManager {
    /// Starts the bus and the manager and waits until `systemctl --user` answers.
    ///
    /// # Errors
    /// When either does not start within 20 s.
    pub fn start() -> Result<Self> {
        let cgroup = Cgroup::new()?;
        let runtime = TempDir::new()?;
        std::fs::set_permissions(
            runtime.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )?;
        std::fs::create_dir_all(runtime.path().join("systemd/user"))?;
        let address = format!("unix:path={}", runtime.path().join("bus").display());
        let mut bus = cgroup.command("dbus-daemon", &["--session", "--nofork", "--nopidfile"]);
        bus.arg(format!("--address={address}"));
        let bus = Proc::spawn("dbus-daemon", bus)?;
        // /run/systemd/inaccessible: the nodes systemd bind-mounts over what ProtectHome=,
        // ProtectKernelLogs=, InaccessiblePaths= hide; PID 1 makes them at boot, we must.
        let script = "mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system && \
                      d=/run/systemd/inaccessible && mkdir -p $d/dir && touch $d/reg && mkfifo $d/fifo && \
                      mknod $d/chr c 0 0 && mknod $d/blk b 0 0 && chmod 000 $d/* && \
                      exec /lib/systemd/systemd --user";
        let mut cmd = cgroup.command(
            "unshare",
            &["--mount", "--propagation", "slave", "sh", "-c", script],
        );
        cmd.env("XDG_RUNTIME_DIR", runtime.path())
            .env("DBUS_SESSION_BUS_ADDRESS", &address);
        let manager = Proc::spawn("systemd --user", cmd)?;
        let mut m = Self {
            manager,
            bus,
            cgroup,
            runtime,
        };
        let res = wait_until(
            "the user manager",
            Duration::from_secs(20),
            Duration::from_millis(100),
            || {
                if let Some(st) = m.manager.try_status() {
                    bail!("systemd --user exited ({st})");
                }
                Ok(m.systemctl(&["show", "-p", "SystemState", "--value"])
                    .ok()
                    .filter(|s| s.trim() == "running"))
            },
        );
        res.map_err(|e| anyhow::anyhow!("{e:#}; its stderr:\n{}", m.manager.stderr_text()))?;
        Ok(m)
    }

    /// Restarts the session bus as a node's bus restart does: every client's connection to
    /// it is gone. The bus clients reach at `bus_address()` is the manager's own
    /// socket-activated `dbus.service` (its `dbus.socket` takes over the path from the
    /// first `dbus-daemon`), so that is the one restarted; waits until the manager answers
    /// on the new bus.
    ///
    /// # Errors
    /// When the restart fails or the manager is not on the new bus within 20 s.
    pub fn restart_bus(&self) -> Result<()> {
        let pid_before = self.prop("dbus.service", "MainPID")?;
        self.systemctl(&["restart", "dbus.service"])?;
        let address = self.bus_address();
        wait_until(
            "systemd --user on the restarted bus",
            Duration::from_secs(20),
            Duration::from_millis(200),
            || {
                let mut ping = Command::new("busctl");
                ping.arg(format!("--address={address}")).args([
                    "--timeout=2",
                    "call",
                    "org.freedesktop.systemd1",
                    "/org/freedesktop/systemd1",
                    "org.freedesktop.DBus.Peer",
                    "Ping",
                ]);
                let pid = self.prop("dbus.service", "MainPID")?;
                Ok((pid != pid_before && crate::infra::cmd::run(&mut ping).is_ok()).then_some(()))
            },
        )
    }

    /// The bus address, for `lifeline run --systemd-bus`.
    #[must_use]
    pub fn bus_address(&self) -> String {
        format!("unix:path={}", self.runtime.path().join("bus").display())
    }

    /// A directory for the tests' files (unit output, logs), removed with the manager.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.runtime.path()
    }

    /// `systemctl --user ARGS` against this manager.
    ///
    /// # Errors
    /// When systemctl fails.
    pub fn systemctl(&self, args: &[&str]) -> Result<String> {
        let mut cmd = Command::new("systemctl");
        cmd.arg("--user")
            .args(args)
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .env("DBUS_SESSION_BUS_ADDRESS", self.bus_address());
        crate::infra::cmd::run(&mut cmd)
    }

    /// `systemctl --user ARGS`' output whatever its exit code (for `status` in failures).
    #[must_use]
    pub fn systemctl_text(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("systemctl");
        cmd.arg("--user")
            .args(args)
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .env("DBUS_SESSION_BUS_ADDRESS", self.bus_address());
        crate::infra::cmd::output(&mut cmd).map_or_else(
            |e| format!("{e:#}"),
            |o| {
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                )
            },
        )
    }

    /// Writes a unit file and reloads the manager.
    ///
    /// # Errors
    /// When the file cannot be written or the reload fails.
    pub fn install(&self, name: &str, text: &str) -> Result<()> {
        std::fs::write(self.runtime.path().join("systemd/user").join(name), text)?;
        self.systemctl(&["daemon-reload"]).map(drop)
    }

    /// Writes a drop-in `UNIT.d/NAME` and reloads the manager.
    ///
    /// # Errors
    /// When the file cannot be written or the reload fails.
    pub fn install_dropin(&self, unit: &str, name: &str, text: &str) -> Result<()> {
        let dir = self
            .runtime
            .path()
            .join("systemd/user")
            .join(format!("{unit}.d"));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(name), text)?;
        self.systemctl(&["daemon-reload"]).map(drop)
    }

    /// One property of a unit (`systemctl --user show -p PROP --value UNIT`).
    ///
    /// # Errors
    /// When systemctl fails.
    pub fn prop(&self, unit: &str, prop: &str) -> Result<String> {
        Ok(self
            .systemctl(&["show", "-p", prop, "--value", unit])?
            .trim()
            .to_owned())
    }

    /// Every cgroup directory under `top`, deepest first.
    fn subdirs(top: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(top) {
            for d in rd.filter_map(Result::ok).filter(|e| e.path().is_dir()) {
                out.extend(Self::subdirs(&d.path()));
                out.push(d.path());
            }
        }
        out
    }
}

impl Drop for UserManager {
    fn drop(&mut self) {
        self.manager.signal(libc::SIGTERM);
        if self.manager.wait_timeout(Duration::from_secs(15)).is_none() {
            eprintln!("lab: systemd --user did not stop within 15 s; killing it");
        }
        let _ = std::fs::write(self.cgroup.path().join("cgroup.kill"), "1");
        self.bus.kill();
        self.manager.kill();
        let name = self
            .cgroup
            .path()
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_default();
        let v1 = Path::new(V1_SYSTEMD).join(&name);
        for top in [self.cgroup.path().to_path_buf(), v1.clone()] {
            for dir in Self::subdirs(&top) {
                for _ in 0..50 {
                    if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        if !name.as_os_str().is_empty() && v1.exists() && std::fs::remove_dir(&v1).is_err() {
            eprintln!("lab: cannot remove {}", v1.display());
        }
    }
}
