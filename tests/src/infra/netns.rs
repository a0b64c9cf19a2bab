//! A named network namespace that is deleted when the guard is dropped.

use std::process::Command;

use anyhow::Result;

use crate::infra::cmd::{in_netns, run, run_args};
use crate::infra::teardown;
use crate::infra::util::unique_name;

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
        crate::infra::stale::sweep();
        let name = unique_name(role);
        run_args(&["ip", "netns", "add", &name])?;
        // From here on Drop removes it, even if the next step fails.
        let ns = Self { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/run/netns/NAME`, for `nsenter --net=`.
    #[must_use]
    pub fn path(&self) -> String {
        crate::infra::cmd::netns_path(&self.name)
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
        teardown::netns_pids(&self.name)
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        teardown::netns(&self.name);
    }
}
