//! The daemon's side of the watch model: started once after the probe is attached, synced
//! at every sweep.

use std::{
    collections::{BTreeSet, HashSet},
    time::{Duration, Instant},
};

use super::{CgroupWatch, PeerSync, TargetStatus};
use crate::{
    endpoint::Follow,
    kernel::{diag::SockDiag, probe::Probe},
    settings::Targets,
    watch::{
        adopt::{self, Adopted, Selector},
        cgroup,
    },
};

pub(crate) struct Watching {
    pub targets: Targets,
    pub ports: Vec<u16>,
    cgroups: CgroupWatch,
    peers: PeerSync,
    /// What `lifeline status` shows of each target, as of the last sync.
    pub status: Vec<TargetStatus>,
    /// The target cgroups' part of `status`, and when the filesystem was last looked at.
    cgroup_status: Vec<TargetStatus>,
    cgroups_checked: Instant,
}

/// How often the target cgroups are looked for on the filesystem. A sweep follows each
/// piece of news at once, several a second on a lossy path, and this look (a `stat` per
/// target and a map read) was the largest single cost of such a sweep; it is the net under
/// the `cgroup_mkdir` tracepoint, which reports a re-created cgroup at once, so once per
/// default sweep interval is enough.
const CGROUPS_EVERY: Duration = Duration::from_secs(1);

impl Watching {
    /// The first look at the target cgroups: present ones are watched from here on.
    pub(crate) fn start(probe: &mut Probe, targets: Targets, ports: Vec<u16>) -> Self {
        let mut cgroups = CgroupWatch::new(&targets.cgroups);
        let status = cgroups.sync(probe, true);
        let mut w = Self {
            targets,
            ports,
            cgroups,
            peers: PeerSync::default(),
            cgroup_status: status.clone(),
            cgroups_checked: Instant::now(),
            status,
        };
        w.status.extend(w.other_status(None));
        w
    }

    /// What decides whether a socket that predates the agent is a target: the present
    /// target cgroups' subtrees (their ids as `sock_diag` reports them), the process names,
    /// and no endpoint peers yet (those are adopted as DNS answers arrive, in `sync`).
    #[must_use]
    pub(crate) fn selector(&self) -> Selector<'_> {
        let cgroup_ids = self
            .targets
            .cgroups
            .iter()
            .filter(|t| t.dir.is_dir())
            .flat_map(|t| cgroup::subtree_ids(&t.dir))
            .collect();
        Selector {
            ports: &self.ports,
            targets: &self.targets,
            cgroup_ids,
            peers: BTreeSet::new(),
        }
    }

    /// Once per sweep: target cgroups, endpoint peers and ports. Returns the sockets adopted
    /// now (see `adopt`).
    pub(crate) fn sync(
        &mut self,
        probe: &mut Probe,
        diag: &mut SockDiag,
        follow: Option<&Follow>,
        keepalive: bool,
    ) -> Adopted {
        if self.cgroups_checked.elapsed() >= CGROUPS_EVERY {
            self.cgroup_status = self.cgroups.sync(probe, false);
            self.cgroups_checked = Instant::now();
        }
        self.status.clone_from(&self.cgroup_status);
        self.status.extend(self.other_status(follow));
        let new_ports = follow
            .map(|f| self.sync_ports(probe, f))
            .unwrap_or_default();
        let mut adopted = Adopted::default();
        if let Some(f) = follow.filter(|_| self.targets.endpoint_clients) {
            let added = self.peers.sync(probe, &f.endpoints, f.grace);
            if !added.is_empty() {
                let select = Selector {
                    ports: &self.ports,
                    targets: &Targets::default(),
                    cgroup_ids: HashSet::new(),
                    peers: added.into_iter().collect(),
                };
                adopted.extend(adopt::adopt(probe, diag, &select, keepalive).unwrap_or_else(|e| {
                    tracing::warn!(error = %format!("{e:#}"), "cannot look for existing sockets to new endpoint addresses; their new connections are watched");
                    Adopted::default()
                }));
            }
        }
        if !new_ports.is_empty() {
            // A kubelet restarted with a kubeconfig naming a new port dialled before this
            // sweep: its connection, and every target's, is adopted as at start.
            let mut select = self.selector();
            select.ports = &new_ports;
            select.peers = self.peers.installed().clone();
            adopted.extend(adopt::adopt(probe, diag, &select, keepalive).unwrap_or_else(|e| {
                tracing::warn!(error = %format!("{e:#}"), "cannot look for existing sockets on the endpoint's new port; its new connections are watched");
                Adopted::default()
            }));
        }
        adopted
    }

    /// Watches the ports the endpoint uses now (a proxy's reload, or kubelet restarted with
    /// another kubeconfig, may bring a new one), at most `MAX_PORTS` in all. Returns those
    /// watched from now on.
    fn sync_ports(&mut self, probe: &mut Probe, f: &Follow) -> Vec<u16> {
        const MAX_PORTS: usize = 64;
        let mut added = Vec::new();
        for port in f.ports() {
            if self.ports.contains(&port) || self.ports.len() >= MAX_PORTS {
                continue;
            }
            match probe.watch_port(port) {
                Ok(()) => {
                    self.ports.push(port);
                    added.push(port);
                    tracing::info!(
                        event = "port-watched",
                        port,
                        "the API endpoint now uses port {port}: watched from now on"
                    );
                }
                Err(e) => {
                    tracing::warn!(port, error = %format!("{e:#}"), "cannot watch port {port}, which the API endpoint now uses");
                    self.ports.push(port); // said once; the next sweep does not try again
                }
            }
        }
        added
    }

    fn other_status(&self, follow: Option<&Follow>) -> Vec<TargetStatus> {
        let mut out: Vec<TargetStatus> = self
            .targets
            .comms
            .iter()
            .map(|c| TargetStatus {
                target: format!("comm {c}"),
                state: "active".into(),
                ..TargetStatus::default()
            })
            .collect();
        if self.targets.endpoint_clients {
            let state = if follow.is_none_or(|f| f.endpoints.is_empty()) {
                "no endpoint"
            } else {
                "active"
            };
            out.push(TargetStatus {
                target: "endpoint clients".into(),
                state: state.into(),
                ..TargetStatus::default()
            });
        }
        out
    }
}
