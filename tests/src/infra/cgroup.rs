//! A private cgroup v2 for the test's clients: the agent is told to watch exactly this one.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::infra::mountinfo::cgroup2_mount;
use crate::infra::teardown;
use crate::infra::util::unique_name;

/// A child cgroup of the cgroup2 root; its processes are killed and it is removed on drop.
pub struct Cgroup {
    path: PathBuf,
    /// The directory made under the root (`path` or an ancestor of it): removed on drop.
    top: PathBuf,
}

impl Cgroup {
    /// # Errors
    /// When there is no cgroup2 mount or the directory cannot be made.
    pub fn new() -> Result<Self> {
        crate::infra::stale::sweep();
        let path = cgroup2_mount()?.join(unique_name(""));
        std::fs::create_dir(&path).with_context(|| format!("mkdir {}", path.display()))?;
        Ok(Self {
            top: path.clone(),
            path,
        })
    }

    /// A systemd unit's cgroup as the agent's proxy rule reads it,
    /// `/ll-PID-N.slice/NAME.service` (a slice of the lab's own, then the unit).
    ///
    /// # Errors
    /// When the directories cannot be made.
    pub fn unit(name: &str) -> Result<Self> {
        Self::nested(&[&format!("{name}.service")])
    }

    /// A static pod's container cgroup as kubelet's systemd driver names it:
    /// `/ll-PID-N.slice/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID>.slice/cri-containerd-<ID>.scope`,
    /// the UID 32 hex digits as kubelet's MD5 of a static pod's manifest.
    ///
    /// # Errors
    /// When the directories cannot be made.
    pub fn static_pod() -> Result<Self> {
        let uid = format!(
            "{:032x}",
            u128::from(std::process::id()) << 64 | u128::from(crate::infra::util::mono_ms())
        );
        Self::nested(&[
            "kubepods.slice",
            "kubepods-burstable.slice",
            &format!("kubepods-burstable-pod{uid}.slice"),
            "cri-containerd-0123456789abcdef.scope",
        ])
    }

    /// A user's login session as systemd-logind places it,
    /// `/ll-PID-N.slice/user.slice/user-UID.slice/session-1.scope`.
    ///
    /// # Errors
    /// When the directories cannot be made.
    pub fn user_session(uid: u32) -> Result<Self> {
        Self::nested(&[
            "user.slice",
            &format!("user-{uid}.slice"),
            "session-1.scope",
        ])
    }

    /// `/ll-PID-N.slice/` then `levels` below it.
    fn nested(levels: &[&str]) -> Result<Self> {
        crate::infra::stale::sweep();
        let top = cgroup2_mount()?.join(unique_name(".slice"));
        std::fs::create_dir(&top).with_context(|| format!("mkdir {}", top.display()))?;
        let mut path = top.clone();
        for l in levels {
            path.push(l);
            if let Err(e) = std::fs::create_dir(&path) {
                teardown::cgroup(&top);
                return Err(e).with_context(|| format!("mkdir {}", path.display()));
            }
        }
        Ok(Self { path, top })
    }

    /// Creates the cgroup at `path` (under the cgroup2 mount, named by `unique_name` so a
    /// leftover is swept), for a target an agent was told about before it existed.
    ///
    /// # Errors
    /// When the directory cannot be made.
    pub fn create(path: &Path) -> Result<Self> {
        std::fs::create_dir(path).with_context(|| format!("mkdir {}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            top: path.to_owned(),
        })
    }

    /// The absolute path, as passed to `lifeline run --cgroup`.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A command that joins this cgroup *before* it execs `prog` inside namespace `ns`, so
    /// every socket the program opens is born in the watched cgroup.
    #[must_use]
    pub fn command_in_netns(&self, ns: &str, prog: &str, args: &[&str]) -> Command {
        let procs = self.path.join("cgroup.procs");
        let mut c = Command::new("sh");
        // $1: the cgroup.procs file, $2: the netns; "$@" after `shift 2` is the command line.
        c.arg("-c")
            .arg(r#"echo $$ > "$1" && ns="$2" && shift 2 && exec nsenter --net="$ns" -- "$@""#)
            .arg("sh")
            .arg(procs)
            .arg(crate::infra::cmd::netns_path(ns))
            .arg(prog)
            .args(args);
        c
    }

    /// A command that joins this cgroup before it execs `prog` (in the caller's namespaces).
    #[must_use]
    pub fn command(&self, prog: &str, args: &[&str]) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(r#"echo $$ > "$1" && shift && exec "$@""#)
            .arg("sh")
            .arg(self.path.join("cgroup.procs"))
            .arg(prog)
            .args(args);
        c
    }

    /// Pids currently in the cgroup.
    #[must_use]
    pub fn pids(&self) -> Vec<i32> {
        teardown::cgroup_pids(&self.path)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        teardown::cgroup(&self.top);
    }
}
