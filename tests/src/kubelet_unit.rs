//! A `kubelet.service` unit under the test's systemd manager whose process is the lab's
//! client (heartbeats to the lab server from the client namespace), for the escalation
//! scenarios: lifeline restarts this unit over D-Bus. Or the endpoint lab's `kube-client`
//! (`install_kube_client`), for the benchmark's restarted-kubelet row.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::api_addrs::DNS_V4;
use crate::apilab::ApiLab;
use crate::client::ClientEvent;
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
    let args = format!(
        "--peer {peer} --lifetime 5m heartbeat --interval 1s{redial}",
        peer = Lab::server_addr(false),
        redial = if redial { " --redial" } else { "" },
    );
    install_exec(m, lab, "lab-client", &args)
}

/// Installs (without starting) the unit with an idle client: connected, sending nothing, as
/// a watch stream between events.
///
/// # Errors
/// When the unit file cannot be written or the manager cannot reload.
pub fn install_idle(m: &UserManager, lab: &Lab) -> Result<()> {
    let args = format!("--peer {} --lifetime 5m idle", Lab::server_addr(false));
    install_exec(m, lab, "lab-client", &args)
}

/// Installs the unit running `kube-client` of the endpoint lab instead (`ApiLab::kube_client`
/// as a unit: HTTP/2 to `API_NAME` resolved through the lab's dnsmasq over IPv4; `extra`:
/// e.g. `--heartbeat 1s`), without starting it. Its events: `events`.
///
/// # Errors
/// When the unit file cannot be written or the manager cannot reload.
pub fn install_kube_client(m: &UserManager, lab: &ApiLab, extra: &[&str]) -> Result<()> {
    let args = ApiLab::kube_client_args(DNS_V4.into(), extra).join(" ");
    install_exec(m, &lab.lab, "kube-client", &args)
}

/// The unit file: fixture `bin` with `args` (no quoting: plain words) in the lab's client
/// namespace, its JSON events appended to `kubelet.out` across restarts.
fn install_exec(m: &UserManager, lab: &Lab, bin: &str, args: &str) -> Result<()> {
    let text = format!(
        "[Unit]\nDescription=kubelet-like lab client\n\n[Service]\n\
         ExecStart=/usr/bin/nsenter --net={ns} -- {client} {args}\n\
         StandardOutput=append:{out}\n",
        ns = lab.client.path(),
        client = fixture(bin)?.display(),
        out = output(m).display(),
    );
    m.install(UNIT, &text)
}

fn output(m: &UserManager) -> PathBuf {
    m.dir().join("kubelet.out")
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

/// Every event the unit's clients printed, over all its runs, oldest first.
#[must_use]
pub fn events(m: &UserManager) -> Vec<ClientEvent> {
    std::fs::read_to_string(output(m))
        .unwrap_or_default()
        .lines()
        .filter_map(ClientEvent::parse)
        .collect()
}

/// The local ports of every connection the unit's clients reported, oldest first.
#[must_use]
pub fn connected_ports(m: &UserManager) -> Vec<u16> {
    events(m)
        .into_iter()
        .filter(|e| matches!(e.event.as_str(), "connected" | "redialed"))
        .filter_map(|e| e.local_port)
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
