//! A `kubelet.service` unit under the test's systemd manager whose process is the lab's
//! client (heartbeats to the lab server from the client namespace), for the escalation
//! scenarios: lifeline restarts this unit over D-Bus.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::lab::Lab;
use crate::paths::fixture;
use crate::systemd::UserManager;
use crate::util::wait_until;

pub const UNIT: &str = "kubelet.service";

/// Installs and starts the unit; waits until it is active.
///
/// # Errors
/// When the unit cannot be installed or does not start within 10 s.
pub fn start(m: &UserManager, lab: &Lab, redial: bool) -> Result<()> {
    install(m, lab, redial)?;
    start_installed(m)
}

/// Installs the unit without starting it.
///
/// # Errors
/// When the unit file cannot be written or the manager cannot reload.
pub fn install(m: &UserManager, lab: &Lab, redial: bool) -> Result<()> {
    let client = fixture("lab-client")?;
    let text = format!(
        "[Unit]\nDescription=kubelet-like lab client\n\n[Service]\n\
         ExecStart=/usr/bin/nsenter --net={ns} -- {client} --peer {peer} --lifetime 5m heartbeat --interval 1s{redial}\n\
         StandardOutput=append:{out}\n",
        ns = lab.client.path(),
        client = client.display(),
        peer = Lab::server_addr(false),
        redial = if redial { " --redial" } else { "" },
        out = m.dir().join("kubelet.out").display(),
    );
    m.install(UNIT, &text)
}

/// `systemctl start` and wait until the unit is active.
///
/// # Errors
/// When it does not start within 10 s.
pub fn start_installed(m: &UserManager) -> Result<()> {
    m.systemctl(&["start", UNIT])?;
    wait_until(
        "kubelet.service active",
        Duration::from_secs(10),
        Duration::from_millis(50),
        || Ok((m.prop(UNIT, "ActiveState")? == "active").then_some(())),
    )
}

/// The local ports of every connection the unit's clients reported, oldest first.
#[must_use]
pub fn connected_ports(m: &UserManager) -> Vec<u16> {
    std::fs::read_to_string(m.dir().join("kubelet.out"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| {
            matches!(
                v.get("event").and_then(Value::as_str),
                Some("connected" | "redialed")
            )
        })
        .filter_map(|v| v.get("local_port")?.as_u64()?.try_into().ok())
        .collect()
}

/// Waits for the `n`-th connection (1-based) and returns its local port.
///
/// # Errors
/// When it does not appear within 15 s.
pub fn wait_connection(m: &UserManager, n: usize) -> Result<u16> {
    wait_until(
        "a client connection",
        Duration::from_secs(15),
        Duration::from_millis(100),
        || Ok(connected_ports(m).get(n - 1).copied()),
    )
    .context("kubelet.service's client did not connect")
}

/// `MainPID` and `InvocationID`: both change when the unit is restarted.
///
/// # Errors
/// When systemctl fails.
pub fn identity(m: &UserManager) -> Result<(String, String)> {
    Ok((m.prop(UNIT, "MainPID")?, m.prop(UNIT, "InvocationID")?))
}

/// The unit's own cgroup, where systemd (re-)creates it on every start: what production
/// targets (`system.slice/kubelet.service`). Known before the unit ever ran: user managers
/// put units under `app.slice` of their own cgroup.
#[must_use]
pub fn cgroup_dir(m: &UserManager) -> std::path::PathBuf {
    m.cgroup.path().join("app.slice").join(UNIT)
}

/// The unit's main process (the lab client itself: `nsenter` execs it).
///
/// # Errors
/// When systemctl fails or the unit has no main process.
pub fn main_pid(m: &UserManager) -> Result<u64> {
    let pid = m.prop(UNIT, "MainPID")?;
    pid.parse::<u64>()
        .ok()
        .filter(|p| *p != 0)
        .with_context(|| format!("{UNIT} has no main process (MainPID={pid})"))
}
