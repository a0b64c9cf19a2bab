//! A real, standalone systemd-journald for one test, in a private mount namespace: tmpfs on
//! /run/systemd (its sockets), /run/log and /var/log/journal (its files), so neither the
//! host nor a parallel test sees its socket or its entries. Processes that should log to it
//! run in that namespace (`command`); `entries` reads it back with `journalctl -o json`.
//! Drop kills journald; its mounts vanish with the namespace when nothing else is in it.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::infra::proc::Proc;
use crate::infra::util::wait_until;

pub struct Journald {
    proc: Proc,
}

impl Journald {
    /// # Errors
    /// When journald does not create its socket within 10 s.
    pub fn start() -> Result<Self> {
        let script = "for d in /run/systemd /run/log /var/log/journal; do \
                      mkdir -p $d && mount -t tmpfs -o mode=0755 tmpfs $d || exit 1; done; \
                      exec /lib/systemd/systemd-journald";
        let mut cmd = Command::new("unshare");
        cmd.args(["--mount", "--propagation", "slave", "sh", "-c", script]);
        let mut j = Self {
            proc: Proc::spawn("systemd-journald", cmd)?,
        };
        let socket = j.root().join("run/systemd/journal/socket");
        let res = wait_until(
            "journald's socket",
            Duration::from_secs(10),
            Duration::from_millis(50),
            || {
                if let Some(st) = j.proc.try_status() {
                    bail!("systemd-journald exited ({st})");
                }
                Ok(socket.exists().then_some(()))
            },
        );
        res.map_err(|e| anyhow::anyhow!("{e:#}; its stderr:\n{}", j.proc.stderr_text()))?;
        Ok(j)
    }

    /// The namespace's view of `/`, through journald's /proc entry.
    fn root(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.proc.pid()))
    }

    /// `nsenter --mount=<journald's> -- prog args...`: runs where journald's socket is.
    #[must_use]
    pub fn command(&self, prog: &str, args: &[&str]) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--mount=/proc/{}/ns/mnt", self.proc.pid()))
            .arg("--")
            .arg(prog)
            .args(args);
        c
    }

    /// Every entry matching the `FIELD=value` matches, as journalctl's JSON objects.
    ///
    /// # Errors
    /// When journalctl fails or prints something that is not JSON.
    pub fn entries(&self, matches: &[&str]) -> Result<Vec<Value>> {
        let mut args = vec!["-o", "json", "--no-pager"];
        args.extend_from_slice(matches);
        let out = crate::infra::cmd::run(&mut self.command("journalctl", &args))?;
        out.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).with_context(|| format!("journalctl printed {l:?}")))
            .collect()
    }
}
