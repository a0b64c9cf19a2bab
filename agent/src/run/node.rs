//! Node integration, wired into `lifeline run` through three calls: `validate`
//! before anything is attached, `start` once the status channel exists, `ready`/`stop`
//! around the sweep loop. Behind them: systemd notify, the restart escalation, metrics.

use anyhow::{Result, bail};
use tokio::{sync::watch, task::JoinHandle};

use crate::{
    act::restart::{
        restarter::{Restarter, Restarts},
        scope::UnitScope,
    },
    report::{metrics::Metrics, notify, status::Snapshot},
    settings::{ActionMode, Run, Targets},
};

/// Flag combinations that make no sense, refused before anything is attached.
///
/// # Errors
/// One line naming the flags.
pub(super) fn validate(args: &Run) -> Result<()> {
    let n = &args.node;
    let r = &args.report;
    if n.action == ActionMode::Restart && n.restart_unit.is_none() {
        bail!(
            "invalid --action restart: it needs --restart-unit (the unit to restart, e.g. kubelet.service)"
        );
    }
    if let Some(addr) = r
        .metrics_addr
        .filter(|a| !a.ip().is_loopback() && !r.metrics_allow_remote)
    {
        bail!(
            "invalid --metrics-addr {addr}: not a loopback address; add --metrics-allow-remote to serve metrics beyond this node"
        );
    }
    Ok(())
}

pub(super) struct NodeTasks {
    tasks: Vec<JoinHandle<()>>,
}

impl NodeTasks {
    /// Starts the background tasks; returns where the daemon sends restart requests (None
    /// without --restart-unit: then lifeline never restarts anything). `targets` and
    /// `cgroup_mount`: to find the unit's cgroup when systemd has not said it yet; `metrics`:
    /// served at `--metrics-addr`, and where the restarter counts its decisions.
    ///
    /// # Errors
    /// When the metrics address cannot be bound.
    pub(super) fn start(
        args: &Run,
        snapshots: &watch::Receiver<Snapshot>,
        endpoints: &crate::endpoint::Endpoints,
        targets: &Targets,
        cgroup_mount: &std::path::Path,
        metrics: &Metrics,
    ) -> Result<(Self, Option<Restarts>)> {
        let mut tasks = Vec::new();
        if let Some(addr) = args.report.metrics_addr {
            tasks.extend(crate::report::metrics::http::serve(
                addr,
                snapshots.clone(),
                metrics.clone(),
            )?);
        }
        tasks.extend(notify::spawn(snapshots.clone(), args.sweep.interval));
        let restarts = args.node.restart_unit.as_ref().map(|unit| {
            let restarter = Restarter {
                bus: args.node.systemd_bus.clone(),
                unit: unit.clone(),
                max_per_hour: args.node.max_restarts,
                first_pause: args.node.restart_backoff,
                endpoints: endpoints.clone(),
                scope: UnitScope::new(unit, cgroup_mount, targets),
                counts: metrics.counts(),
            };
            let (tx, task) = restarter.spawn();
            tasks.push(task);
            tx
        });
        Ok((Self { tasks }, restarts))
    }

    /// The probe is attached: give back the start's freed heap, tell systemd.
    #[allow(
        clippy::unused_self,
        reason = "a method so that it can only be called once started"
    )]
    pub(super) fn ready(&self, snapshot: &Snapshot) {
        // Loading the probe parsed the kernel's BTF: about 20 MB the agent never needs again.
        crate::node::memory::release_freed();
        notify::ready(snapshot);
    }

    /// Leaving: tell systemd, end the tasks.
    pub(super) fn stop(self) {
        notify::stopping();
        for t in self.tasks {
            t.abort();
        }
    }
}
