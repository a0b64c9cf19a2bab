//! systemd's D-Bus API (org.freedesktop.systemd1): restart a unit and wait for the job's
//! result, the unit's cgroup, and (for `check`) whether a unit is known. Which manager: the system bus, or
//! the session bus of `DBUS_SESSION_BUS_ADDRESS` for a user manager (`--systemd-bus user`).

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use futures_lite::StreamExt as _;
use zbus::{Connection, zvariant::OwnedObjectPath};

use crate::settings::SystemdBus;

/// A restart job that takes longer than this is reported as not finished.
const JOB_TIMEOUT: Duration = Duration::from_mins(2);

#[zbus::proxy(
    interface = "org.freedesktop.systemd1.Manager",
    default_service = "org.freedesktop.systemd1",
    default_path = "/org/freedesktop/systemd1"
)]
pub trait Manager {
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
pub(crate) async fn connect(bus: &SystemdBus) -> Result<Connection> {
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

/// One connection to the manager, subscribed once. systemd tracks one subscription per bus
/// client and answers a second `Subscribe` with `org.freedesktop.systemd1.AlreadySubscribed`
/// (`method_subscribe()` in
/// <https://github.com/systemd/systemd/blob/v252/src/core/dbus-manager.c>), so subscribing
/// before every restart over a kept connection failed every second restart.
pub(crate) struct Bus {
    manager: ManagerProxy<'static>,
    /// Subscribed on this connection: at its first restart, not before (a subscriber gets
    /// every job and unit signal of the manager, which nothing reads until a restart).
    subscribed: bool,
}

/// Why a restart did not finish; `NotSent`: it never reached systemd (the bus is gone),
/// so a fresh connection may try again without restarting twice.
#[derive(Debug)]
pub(crate) enum RestartError {
    NotSent(anyhow::Error),
    Failed(anyhow::Error),
}

impl RestartError {
    /// An error of a call made before the job existed: systemd's own answer (a method
    /// error) is final; anything else means the call may never have reached it.
    fn of(e: zbus::Error, call: String) -> Self {
        let answered = matches!(e, zbus::Error::MethodError(..) | zbus::Error::FDO(_));
        let e = anyhow::Error::from(e).context(call);
        if answered {
            Self::Failed(e)
        } else {
            Self::NotSent(e)
        }
    }
}

impl Bus {
    /// Connects (not subscribed yet).
    ///
    /// # Errors
    /// When the bus cannot be reached.
    pub(crate) async fn connect(bus: &SystemdBus) -> Result<Self> {
        let conn = connect(bus).await?;
        let manager = ManagerProxy::new(&conn).await?;
        Ok(Self {
            manager,
            subscribed: false,
        })
    }

    /// `RestartUnit(unit, "replace")`, then wait for its `JobRemoved`: the job's result
    /// ("done", "failed", "timeout", "canceled", "dependency", "skipped").
    ///
    /// # Errors
    /// When the call fails or the job does not finish within two minutes.
    pub(crate) async fn restart(&mut self, unit: &str) -> Result<String, RestartError> {
        // `JobRemoved` is only sent to subscribers: once per connection.
        if !self.subscribed {
            let subscribed = self.manager.subscribe().await;
            subscribed.map_err(|e| RestartError::of(e, "Subscribe".to_owned()))?;
            self.subscribed = true;
        }
        // Listen before the call, or a fast job's signal could be missed.
        let mut removed = self
            .manager
            .receive_job_removed()
            .await
            .map_err(|e| RestartError::NotSent(e.into()))?;
        let job = self
            .manager
            .restart_unit(unit, "replace")
            .await
            .map_err(|e| RestartError::of(e, format!("RestartUnit {unit}")))?;
        let wait = async {
            while let Some(signal) = removed.next().await {
                let args = signal.args()?;
                if args.job == job {
                    return Ok(args.result);
                }
            }
            Err(anyhow!("the bus closed before the job finished"))
        };
        let waited = tokio::time::timeout(JOB_TIMEOUT, wait).await.map_err(|_| {
            anyhow!(
                "the restart job of {unit} did not finish within {}s",
                JOB_TIMEOUT.as_secs()
            )
        });
        waited.and_then(|r| r).map_err(RestartError::Failed)
    }

    /// The unit's `ControlGroup` ("/system.slice/kubelet.service"; empty while it has no
    /// processes), from the hierarchy's root.
    ///
    /// # Errors
    /// When the manager does not answer.
    pub(crate) async fn control_group(&self, unit: &str) -> Result<String> {
        let path = self
            .manager
            .load_unit(unit)
            .await
            .with_context(|| format!("LoadUnit {unit}"))?;
        // ControlGroup is a property of the unit type's interface (Service, Scope, ...).
        let kind = unit.rsplit('.').next().unwrap_or("service");
        let mut chars = kind.chars();
        let kind: String = chars
            .next()
            .map(|c| c.to_ascii_uppercase())
            .into_iter()
            .chain(chars)
            .collect();
        let props = zbus::fdo::PropertiesProxy::builder(self.manager.inner().connection())
            .destination("org.freedesktop.systemd1")?
            .path(path)?
            .build()
            .await?;
        let iface =
            zbus::names::InterfaceName::try_from(format!("org.freedesktop.systemd1.{kind}"))?;
        let value = props
            .get(iface, "ControlGroup")
            .await
            .with_context(|| format!("ControlGroup of {unit}"))?;
        String::try_from(value).context("ControlGroup is not a string")
    }
}

/// The unit's load and active state ("loaded", "active"), for `check`.
///
/// # Errors
/// When the manager does not answer.
pub(crate) async fn unit_state(conn: &Connection, unit: &str) -> Result<(String, String)> {
    let manager = ManagerProxy::new(conn).await?;
    let path = manager
        .load_unit(unit)
        .await
        .with_context(|| format!("LoadUnit {unit}"))?;
    let proxy = UnitProxy::builder(conn).path(path)?.build().await?;
    Ok((proxy.load_state().await?, proxy.active_state().await?))
}
