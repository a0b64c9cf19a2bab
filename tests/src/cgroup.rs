//! A private cgroup v2 for the test's clients: the agent is told to watch exactly this one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::util::unique_name;

/// Where cgroup2 is mounted, read from /proc/self/mountinfo: `/sys/fs/cgroup` on pure-v2
/// nodes, `/sys/fs/cgroup/unified` on hybrid ones such as this project's machines.
///
/// # Errors
/// When mountinfo cannot be read or has no cgroup2 mount.
pub fn cgroup2_mount() -> Result<PathBuf> {
    cgroup2_mounts()?
        .into_iter()
        .next()
        .context("no cgroup2 mount in /proc/self/mountinfo")
}

/// Every cgroup2 mount point (normally one).
///
/// # Errors
/// When /proc/self/mountinfo cannot be read.
pub fn cgroup2_mounts() -> Result<Vec<PathBuf>> {
    let info =
        std::fs::read_to_string("/proc/self/mountinfo").context("read /proc/self/mountinfo")?;
    // Fields: id parent maj:min root mountpoint opts [optional...] - fstype source superopts
    Ok(info
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let mountpoint = pre.split_whitespace().nth(4)?;
            (post.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mountpoint))
        })
        .collect())
}

/// A child cgroup of the cgroup2 root; its processes are killed and it is removed on drop.
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// # Errors
    /// When there is no cgroup2 mount or the directory cannot be made.
    pub fn new() -> Result<Self> {
        crate::stale::sweep();
        let path = cgroup2_mount()?.join(unique_name(""));
        std::fs::create_dir(&path).with_context(|| format!("mkdir {}", path.display()))?;
        Ok(Self { path })
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
        })
    }

    /// Takes ownership of an existing cgroup (a leftover to remove).
    pub(crate) fn adopt(path: PathBuf) -> Self {
        Self { path }
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
            .arg(crate::cmd::netns_path(ns))
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
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .map(|s| s.lines().filter_map(|p| p.trim().parse().ok()).collect())
            .unwrap_or_default()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // cgroup.kill (Linux 5.14+) kills everything at once; kill(2) per pid as a fallback.
        let _ = std::fs::write(self.path.join("cgroup.kill"), "1");
        for _ in 0..50 {
            let pids = self.pids();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                // SAFETY: kill(2) on pids that live in the test's own cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // rmdir fails while a (zombie) member is being torn down; retry briefly.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.path).is_ok() || !self.path.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("lab: cannot remove cgroup {}", self.path.display());
    }
}
