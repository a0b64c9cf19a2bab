//! Target cgroups over their lifetime. The kernel keeps `TARGET_CGROUPS` current at the
//! moment a cgroup is made or removed (the tracepoints); each sweep this checks the result
//! against the filesystem, repairs what the kernel side could not see (no tracepoint, a
//! cgroup made before the agent), reports every appearance and disappearance once, and
//! gives `lifeline status` each target's state.

use std::{collections::HashMap, os::unix::fs::MetadataExt as _, time::Instant};

use serde::{Deserialize, Serialize};

use crate::{kernel::probe::Probe, settings::CgroupTarget};

/// What `lifeline status` shows of one target.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct TargetStatus {
    /// `cgroup /system.slice/kubelet.service`, `comm kubelet`, `endpoint clients`.
    pub target: String,
    /// `present` (the cgroup exists and is watched), `waiting` (it does not exist yet, or
    /// any more), or `active` for the targets that are not cgroups.
    pub state: String,
    pub cgroup_id: Option<u64>,
    /// How long a cgroup target has been in this state.
    pub since_ms: Option<u64>,
}

pub(crate) struct CgroupWatch {
    targets: Vec<CgroupTarget>,
    /// Per target: the cgroup id seen at the last sync (None: waiting), and since when.
    seen: Vec<(Option<u64>, Instant)>,
}

impl CgroupWatch {
    #[must_use]
    pub(crate) fn new(targets: &[CgroupTarget]) -> Self {
        Self {
            targets: targets.to_vec(),
            seen: vec![(None, Instant::now()); targets.len()],
        }
    }

    /// Bring the probe's ids in step with the filesystem; log and return each target's state.
    /// `first`: the sync at start (a missing target is logged as waiting, not as gone).
    pub(crate) fn sync(&mut self, probe: &mut Probe, first: bool) -> Vec<TargetStatus> {
        let kernel = probe.target_cgroups().unwrap_or_else(|e| {
            tracing::warn!(error = %format!("{e:#}"), "cannot read TARGET_CGROUPS; checking the filesystem only");
            Vec::new()
        });
        let mut by_index: HashMap<u32, Vec<u64>> = HashMap::new();
        for (id, index) in kernel {
            by_index.entry(index).or_default().push(id);
        }
        let now = Instant::now();
        let mut out = Vec::with_capacity(self.targets.len());
        for (i, t) in self.targets.iter().enumerate() {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            let on_disk = std::fs::metadata(&t.dir)
                .ok()
                .filter(std::fs::Metadata::is_dir)
                .map(|m| m.ino());
            let known = by_index.remove(&index).unwrap_or_default();
            for stale in known.iter().filter(|id| Some(**id) != on_disk) {
                probe.remove_target_cgroup(*stale);
            }
            // Read again before blaming the tracepoint: a restart may have landed between
            // the map read above and the stat.
            if let Some(id) =
                on_disk.filter(|id| !known.contains(id) && !probe.has_target_cgroup(*id))
            {
                if !first && probe.tracks_cgroups {
                    tracing::warn!(target_cgroup = %t.key, cgroup_id = id, "the cgroup_mkdir tracepoint did not report this target; added it now (its first connections may have been missed)");
                }
                if let Err(e) = probe.set_target_cgroup(id, index) {
                    tracing::error!(target_cgroup = %t.key, error = %format!("{e:#}"), "cannot watch the target cgroup");
                }
            }
            let (prev, since) = &mut self.seen[i];
            if *prev != on_disk || first {
                report(t, *prev, on_disk, first);
                *prev = on_disk;
                *since = now;
            }
            out.push(TargetStatus {
                target: format!("cgroup {}", t.key),
                state: if on_disk.is_some() {
                    "present"
                } else {
                    "waiting"
                }
                .to_owned(),
                cgroup_id: on_disk,
                since_ms: Some(
                    u64::try_from(now.duration_since(*since).as_millis()).unwrap_or(u64::MAX),
                ),
            });
        }
        out
    }
}

/// One line per change: operators grep for these when a unit restarts.
fn report(t: &CgroupTarget, prev: Option<u64>, now: Option<u64>, first: bool) {
    let dir = t.dir.display();
    match (prev, now) {
        (_, Some(id)) if first => {
            tracing::info!(event = "target-present", target_cgroup = %t.key, cgroup_id = id, "target cgroup {dir} is watched");
        }
        (None, None) => {
            tracing::info!(event = "target-waiting", target_cgroup = %t.key, "target cgroup {dir} does not exist yet; its sockets are watched from the moment it is created");
        }
        (None, Some(id)) => {
            tracing::info!(event = "target-appeared", target_cgroup = %t.key, cgroup_id = id, "target cgroup {dir} appeared; watched");
        }
        (Some(old), Some(id)) => {
            tracing::info!(event = "target-recreated", target_cgroup = %t.key, cgroup_id = id, old_cgroup_id = old, "target cgroup {dir} was re-created (unit restart); its new cgroup is watched");
        }
        (Some(old), None) => {
            tracing::info!(event = "target-gone", target_cgroup = %t.key, old_cgroup_id = old, "target cgroup {dir} is gone (unit stopped); waiting for it to come back");
        }
    }
}
