//! A named network namespace that is deleted when the guard is dropped.

use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use crate::cmd::{in_netns, run, run_args};
use crate::util::unique_name;

/// A network namespace created with `ip netns add`, so tools can address it by name and
/// by `/run/netns/NAME`. Dropping it kills what still runs inside, then deletes it.
pub struct NetNs {
    name: String,
}

impl NetNs {
    /// Creates a namespace named `ll-<pid>-<n><role>` with its loopback up.
    ///
    /// # Errors
    /// When `ip netns add` fails.
    pub fn new(role: &str) -> Result<Self> {
        crate::stale::sweep();
        let name = unique_name(role);
        run_args(&["ip", "netns", "add", &name])?;
        // From here on Drop removes it, even if the next step fails.
        let ns = Self { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Takes ownership of an existing namespace (a leftover to remove).
    pub(crate) fn adopt(name: &str) -> Self {
        Self {
            name: name.to_owned(),
        }
    }

    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/run/netns/NAME`, for `nsenter --net=`.
    #[must_use]
    pub fn path(&self) -> String {
        crate::cmd::netns_path(&self.name)
    }

    /// `ip -n NAME args...`.
    ///
    /// # Errors
    /// When ip fails.
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        run(Command::new("ip").arg("-n").arg(&self.name).args(args))
    }

    /// Runs `prog args...` inside the namespace to completion.
    ///
    /// # Errors
    /// When the program fails.
    pub fn exec(&self, prog: &str, args: &[&str]) -> Result<String> {
        run(&mut in_netns(&self.name, prog, args))
    }

    /// A command that will run inside this namespace (not yet started).
    #[must_use]
    pub fn command(&self, prog: &str, args: &[&str]) -> Command {
        in_netns(&self.name, prog, args)
    }

    /// Pids of processes whose network namespace is this one.
    #[must_use]
    pub fn pids(&self) -> Vec<i32> {
        run_args(&["ip", "netns", "pids", &self.name])
            .map(|s| {
                s.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // Kill stragglers first: a namespace with live processes outlives `ip netns del`
        // (only its name goes), and its sockets and veths would linger.
        for _ in 0..20 {
            let pids = self.pids();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                // SAFETY: plain kill(2) on a pid we found in our own namespace.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Err(e) = run_args(&["ip", "netns", "del", &self.name]) {
            eprintln!("lab: cannot delete netns {}: {e:#}", self.name);
        }
    }
}
