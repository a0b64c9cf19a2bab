//! Running the system tools the lab is built from (ip, nft, ss, nsenter).

use std::process::{Command, Output, Stdio};

use anyhow::{Context, Result, bail};

/// The path of a named network namespace as `ip netns add` creates it.
#[must_use]
pub fn netns_path(ns: &str) -> String {
    format!("/run/netns/{ns}")
}

/// `nsenter --net=/run/netns/NS -- prog args...`.
///
/// nsenter rather than `ip netns exec`: the latter remounts /sys for the new namespace, which
/// hides the cgroup2 mount (and bpffs) from the program, and the agent needs both.
#[must_use]
pub fn in_netns(ns: &str, prog: &str, args: &[&str]) -> Command {
    let mut c = Command::new("nsenter");
    c.arg(format!("--net={}", netns_path(ns)))
        .arg("--")
        .arg(prog)
        .args(args);
    c
}

/// Runs a command to completion; fails with its stderr when it exits non-zero.
///
/// # Errors
/// When the command cannot start or exits with a failure.
pub fn run(cmd: &mut Command) -> Result<String> {
    let out = output(cmd)?;
    if !out.status.success() {
        bail!(
            "{:?} failed ({}): {}",
            cmd,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a command to completion with stdin closed and returns what it printed.
///
/// # Errors
/// When the command cannot be started.
pub fn output(cmd: &mut Command) -> Result<Output> {
    cmd.stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))
}

/// `run` for a plain argument list: `sh(&["ip", "netns", "add", name])`.
///
/// # Errors
/// As `run`.
pub fn run_args(args: &[&str]) -> Result<String> {
    let (prog, rest) = args.split_first().context("empty command")?;
    run(Command::new(prog).args(rest))
}
