//! The packaged unit's sandbox around any lifeline command: `systemd-run --user --pipe` on
//! the test's real systemd manager with every `[Service]` setting of
//! `packaging/lifeline.service` that confines the process (capabilities, system-call and
//! address-family filters, `Protect*`, namespaces, limits, umask), read from the file so a
//! change there is tested. Left out: the unit's life cycle (`Type=notify`, the watchdog,
//! restarts: `tests/tests/lab/systemd_notify.rs` runs the unit file itself) and `ExecStart`.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result, ensure};

use crate::paths::workspace;
use crate::systemd::UserManager;

/// Settings of the life cycle, not of the sandbox.
const LIFE_CYCLE: [&str; 6] = [
    "Type",
    "ExecStart",
    "WatchdogSec",
    "TimeoutStartSec",
    "Restart",
    "RestartSec",
];

/// The unit's sandbox as `systemd-run -p` values (`Name=value`).
///
/// # Errors
/// When the unit file cannot be read or has no such settings.
pub fn properties() -> Result<Vec<String>> {
    let path = workspace().join("packaging/lifeline.service");
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let mut in_service = false;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_service = line == "[Service]";
            continue;
        }
        let Some((name, _)) = line.split_once('=') else {
            continue;
        };
        if in_service && !line.starts_with('#') && !LIFE_CYCLE.contains(&name) {
            out.push(line.to_owned());
        }
    }
    for needed in [
        "CapabilityBoundingSet",
        "SystemCallFilter",
        "RestrictAddressFamilies",
    ] {
        ensure!(
            out.iter().any(|p| p.starts_with(&format!("{needed}="))),
            "no {needed} in the unit"
        );
    }
    Ok(out)
}

/// `systemd-run --user --wait --pipe` of `bin args...` as the transient unit `unit`, with
/// the packaged sandbox plus `extra` settings (the lab's network namespace, a writable
/// directory), its stdio this command's.
///
/// # Errors
/// When the unit file cannot be read.
pub fn command(
    m: &UserManager,
    unit: &str,
    extra: &[String],
    bin: &Path,
    args: &[&str],
) -> Result<Command> {
    let mut c = Command::new("systemd-run");
    c.args(["--user", "--wait", "--pipe", "--quiet", "--collect"])
        .arg(format!("--unit={unit}"))
        .env("XDG_RUNTIME_DIR", m.dir())
        .env("DBUS_SESSION_BUS_ADDRESS", m.bus_address());
    for p in properties()?.iter().chain(extra) {
        c.arg("-p").arg(p);
    }
    c.arg("--").arg(bin).args(args);
    Ok(c)
}
