//! `lifeline check` in the lab's client namespace, for the tc-chain tests: started to be
//! interrupted, or run to its end where the kernel has no fast probes.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::assertions::tc_chain::{has_clsact, lifeline_on_dev};
use crate::infra::proc::Proc;
use crate::scenarios::scenario::Setup;

/// `lifeline check --cgroup CG` started in the client namespace.
///
/// # Errors
/// When it cannot start.
pub fn spawn_check(s: &Setup) -> Result<Proc> {
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", s.lab.client.path()))
        .arg("--")
        .arg(crate::infra::paths::lifeline()?)
        .arg("check")
        .arg("--cgroup")
        .arg(s.cgroup.path());
    Proc::spawn("lifeline check", cmd)
}

/// Before 5.15: the whole check's `silence evidence` row warns that fast probes are
/// unavailable, and nothing was attached to the device. Returns the row.
///
/// # Errors
/// When it does not end, the row says otherwise, or something is on the device.
pub fn check_says_unavailable(s: &Setup) -> Result<String> {
    let mut p = spawn_check(s)?;
    let status = p
        .wait_timeout(Duration::from_mins(2))
        .context("check did not end")?;
    let out = (p.stdout_lines().iter())
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let row = out
        .lines()
        .find(|l| l.starts_with("silence evidence"))
        .unwrap_or_default();
    ensure!(
        row.contains("warn") && row.contains("unavailable"),
        "{status}: {out}"
    );
    let ns = &s.lab.client;
    ensure!(
        lifeline_on_dev(ns)?.1.is_empty() && !has_clsact(ns)?,
        "nothing attached"
    );
    Ok(format!(
        "check: `{}`",
        row.split_whitespace().collect::<Vec<_>>().join(" ")
    ))
}
