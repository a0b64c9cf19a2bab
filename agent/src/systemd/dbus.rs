//! systemd's D-Bus API (org.freedesktop.systemd1): restart a unit and wait for the job's
//! result, and (for `check`) whether a unit is known. Which manager: the system bus, or
//! the session bus of `DBUS_SESSION_BUS_ADDRESS` for a user manager (`--systemd-bus user`).

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use futures_lite::StreamExt as _;
use zbus::{Connection, zvariant::OwnedObjectPath};

use crate::node_args::SystemdBus;

/// A restart job that takes longer than this is reported as not finished.
const JOB_TIMEOUT: Duration = Duration::from_mins(2);

#[zbus::proxy(
    interface = "org.freedesktop.systemd1.Manager",
    default_service = "org.freedesktop.systemd1",
    default_path = "/org/freedesktop/systemd1"
)]
trait Manager {
    fn subscribe(&self) -> zbus::Result<()>;
    fn restart_unit(&self, name: &str, mode: &str) -> zbus::Result<OwnedObjectPath>;
    fn load_unit(&self, name: &str) -> zbus::Result<OwnedObjectPath>;
    #[zbus(signal)]
    fn job_removed(
        &self,
        id: u32,
        job: OwnedObjectPath,
        unit: String,
        result: String,
    ) -> zbus::Result<()>;
}

#[zbus::proxy(
    interface = "org.freedesktop.systemd1.Unit",
    default_service = "org.freedesktop.systemd1"
)]
trait Unit {
    #[zbus(property)]
    fn load_state(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn active_state(&self) -> zbus::Result<String>;
}

/// # Errors
/// When the bus cannot be reached.
pub async fn connect(bus: &SystemdBus) -> Result<Connection> {
    match bus {
        SystemdBus::System => Connection::system()
            .await
            .context("cannot connect to the system D-Bus"),
        SystemdBus::User => Connection::session()
            .await
            .context("cannot connect to the session D-Bus (DBUS_SESSION_BUS_ADDRESS)"),
        SystemdBus::Address(a) => zbus::connection::Builder::address(a.as_str())
            .with_context(|| format!("invalid D-Bus address {a}"))?
            .build()
            .await
            .with_context(|| format!("cannot connect to the D-Bus at {a}")),
    }
}

/// `RestartUnit(unit, "replace")`, then wait for its `JobRemoved`: the job's result
/// ("done", "failed", "timeout", "canceled", "dependency", "skipped").
///
/// # Errors
/// When the call fails or the job does not finish within two minutes.
pub async fn restart(conn: &Connection, unit: &str) -> Result<String> {
    let manager = ManagerProxy::new(conn).await?;
    // Subscribe and listen before the call, or a fast job's signal could be missed.
    manager.subscribe().await.context("Subscribe")?;
    let mut removed = manager.receive_job_removed().await?;
    let job = manager
        .restart_unit(unit, "replace")
        .await
        .with_context(|| format!("RestartUnit {unit}"))?;
    let wait = async {
        while let Some(signal) = removed.next().await {
            let args = signal.args()?;
            if args.job == job {
                return Ok(args.result);
            }
        }
        Err(anyhow!("the bus closed before the job finished"))
    };
    tokio::time::timeout(JOB_TIMEOUT, wait).await.map_err(|_| {
        anyhow!(
            "the restart job of {unit} did not finish within {}s",
            JOB_TIMEOUT.as_secs()
        )
    })?
}

/// The unit's load and active state ("loaded", "active"), for `check`.
///
/// # Errors
/// When the manager does not answer.
pub async fn unit_state(conn: &Connection, unit: &str) -> Result<(String, String)> {
    let manager = ManagerProxy::new(conn).await?;
    let path = manager
        .load_unit(unit)
        .await
        .with_context(|| format!("LoadUnit {unit}"))?;
    let proxy = UnitProxy::builder(conn).path(path)?.build().await?;
    Ok((proxy.load_state().await?, proxy.active_state().await?))
}
