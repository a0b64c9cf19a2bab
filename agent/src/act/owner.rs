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

use crate::{
    judge::{Budget, Record, UnitOwned, Whose},
    settings::Targets,
    watch::cgroup,
};

/// The subtrees of one batch of kills.
pub struct Scopes {
    /// Each target cgroup's key and the cgroup ids of its subtree now.
    targets: Vec<(String, HashSet<u64>)>,
    comms: Vec<String>,
    /// `--restart-unit`'s subtree now; None without a restarter or while its cgroup is
    /// not known.
    unit: Option<HashSet<u64>>,
}

impl Scopes {
    #[must_use]
    pub fn read(targets: &Targets, unit_dir: Option<&Path>) -> Self {
        Self {
            targets: targets
                .cgroups
                .iter()
                .map(|t| (t.key.clone(), cgroup::subtree_ids(&t.dir)))
                .collect(),
            comms: targets.comms.clone(),
            unit: unit_dir.map(cgroup::subtree_ids),
        }
    }

    /// Whose the socket with record `rec` is; `cgroup_id`: its cgroup from `sock_diag`,
    /// None when it could not be read (the socket closed, an old kernel).
    #[must_use]
    pub fn whose(&self, cgroup_id: Option<u64>, rec: &Record) -> Whose {
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
        let budget = in_target
            .or_else(by_comm)
            .or_else(|| (rec.reasons & BY_ENDPOINT != 0).then_some(Budget::EndpointClients))
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
mod tests {
    use lifeline_common::watch::BY_CGROUP;

    use super::*;

    fn rec(comm: &str, reasons: u32) -> Record {
        let mut r = Record {
            reasons,
            ..Record::default()
        };
        r.owner_comm.0[..comm.len()].copy_from_slice(comm.as_bytes());
        r
    }

    fn scopes(unit: Option<&[u64]>) -> Scopes {
        Scopes {
            targets: vec![
                (
                    "/system.slice/kube-proxy.service".into(),
                    HashSet::from([5]),
                ),
                (
                    "/system.slice/kubelet.service".into(),
                    HashSet::from([7, 8]),
                ),
            ],
            comms: vec!["noisy".into()],
            unit: unit.map(|ids| ids.iter().copied().collect()),
        }
    }

    #[test]
    fn the_most_specific_target_pays_and_only_the_units_cgroup_is_the_unit() {
        let s = scopes(Some(&[7, 8]));
        let kubelet = s.whose(Some(8), &rec("kubelet", BY_CGROUP | BY_ENDPOINT));
        assert_eq!(
            kubelet.budget,
            Budget::Cgroup("/system.slice/kubelet.service".into())
        );
        assert_eq!(kubelet.unit, UnitOwned::Yes, "a child cgroup of the unit's");
        let proxy = s.whose(Some(5), &rec("kube-proxy", BY_CGROUP));
        assert_eq!(
            (proxy.budget.to_string(), proxy.unit),
            (
                "cgroup /system.slice/kube-proxy.service".into(),
                UnitOwned::No
            )
        );
        let noisy = s.whose(Some(99), &rec("noisy", BY_COMM | BY_ENDPOINT));
        assert_eq!(
            (noisy.budget, noisy.unit),
            (Budget::Comm("noisy".into()), UnitOwned::No)
        );
        let client = s.whose(Some(99), &rec("curl", BY_ENDPOINT));
        assert_eq!(client.budget, Budget::EndpointClients);
        let adopted = s.whose(Some(99), &rec("-", 0));
        assert_eq!(adopted.budget, Budget::Unattributed);
    }

    #[test]
    fn without_evidence_the_socket_is_never_the_units() {
        let gone = scopes(Some(&[7])).whose(None, &rec("kubelet", BY_CGROUP));
        assert_eq!(
            gone.unit,
            UnitOwned::Unknown,
            "its cgroup could not be read"
        );
        let no_unit = scopes(None).whose(Some(7), &rec("kubelet", BY_CGROUP));
        assert_eq!(
            no_unit.unit,
            UnitOwned::Unknown,
            "the unit's cgroup unknown"
        );
        let stopped = scopes(Some(&[])).whose(Some(7), &rec("kubelet", BY_CGROUP));
        assert_eq!(
            stopped.unit,
            UnitOwned::Unknown,
            "the unit's cgroup is not there"
        );
    }
}
