//! Whose a socket is, found out just before acting on it: the cgroup the socket was created
//! in, as `sock_diag` reports it (`INET_DIAG_CGROUP_ID`, the socket's own cgroup from
//! `sk->sk_cgrp_data`, so it holds even when the connecting process is gone; see
//! `inet_diag_msg_attrs_fill()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/inet_diag.c>), matched against
//! the target cgroups' and the unit's subtrees as they are now (read once per batch of
//! kills: the directories are re-created on every unit restart, their paths stay); then
//! the process name and the watch reasons the probe recorded.

use std::{collections::HashSet, path::Path};

use lifeline_common::watch::{BY_COMM, BY_ENDPOINT};

use super::group::Groups;
use crate::{
    judge::{Budget, Record, UnitOwned, Whose},
    kernel::diag::CgroupId,
    settings::Targets,
    watch::cgroup,
};

/// What the read right before a kill says of the socket (`sock_diag`): None for what it
/// could not say (the socket closed, an old kernel).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LastRead {
    pub cgroup_id: Option<CgroupId>,
    pub uid: Option<u32>,
}

/// The subtrees of one batch of kills.
pub(crate) struct Scopes {
    /// Each target cgroup's key and the cgroup ids of its subtree now.
    targets: Vec<(String, HashSet<CgroupId>)>,
    comms: Vec<String>,
    /// `--restart-unit`'s subtree now; None without a restarter or while its cgroup is
    /// not known.
    unit: Option<HashSet<CgroupId>>,
    /// Endpoint clients' groups, found once per batch.
    groups: Groups,
}

impl Scopes {
    #[must_use]
    pub(crate) fn read(targets: &Targets, unit_dir: Option<&Path>) -> Self {
        Self {
            targets: targets
                .cgroups
                .iter()
                .map(|t| (t.key.clone(), cgroup::subtree_ids(&t.dir)))
                .collect(),
            comms: targets.comms.clone(),
            unit: unit_dir.map(cgroup::subtree_ids),
            groups: Groups::new(),
        }
    }

    /// Whose the socket with record `rec` is, as `seen` just before the kill.
    pub(crate) fn whose(&mut self, seen: LastRead, rec: &Record) -> Whose {
        let LastRead { cgroup_id, uid } = seen;
        let in_target = cgroup_id.and_then(|id| {
            self.targets
                .iter()
                .find(|(_, ids)| ids.contains(&id))
                .map(|(key, _)| Budget::Cgroup(key.clone()))
        });
        let by_comm = || {
            self.comms
                .iter()
                .find(|c| rec.comm() == Some(c.as_str()))
                .filter(|_| rec.reasons & BY_COMM != 0 || rec.reasons == 0)
                .map(|c| Budget::Comm(c.clone()))
        };
        let groups = &mut self.groups;
        let client = || {
            let uid = uid.filter(|_| rec.reasons & BY_ENDPOINT != 0)?;
            let group = cgroup_id.and_then(|id| groups.group(id.0, rec.owner_pid));
            Some(Budget::EndpointClient { group, uid })
        };
        let budget = in_target
            .or_else(by_comm)
            .or_else(client)
            .unwrap_or(Budget::Unattributed);
        let unit = match (&self.unit, cgroup_id) {
            (Some(ids), Some(id)) if ids.contains(&id) => UnitOwned::Yes,
            (Some(ids), Some(_)) if !ids.is_empty() => UnitOwned::No,
            _ => UnitOwned::Unknown,
        };
        Whose { budget, unit }
    }
}

#[cfg(test)]
#[path = "owner_tests.rs"]
mod tests;
