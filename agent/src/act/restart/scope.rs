//! Which cgroup is `--restart-unit`'s, so that only its own sockets can restart it: the
//! unit's `ControlGroup` as systemd reports it (the restarter asks at start, after every
//! restart, and while it is unknown), else a target cgroup that is the unit's (its last
//! component is the unit's name, as `system.slice/kubelet.service` for `kubelet.service`).
//! A path, not an id: systemd removes and re-creates the directory on every restart, so the
//! daemon reads the subtree under this path when it acts (`act::owner`).

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use crate::settings::Targets;

#[derive(Clone, Debug)]
pub(crate) struct UnitScope {
    pub unit: String,
    /// The cgroup2 mount the paths are under.
    mount: PathBuf,
    /// The last non-empty `ControlGroup` systemd reported (kept while the unit is stopped).
    reported: Arc<Mutex<Option<String>>>,
    /// A target cgroup's directory that is the unit's, if any.
    target: Option<PathBuf>,
}

impl UnitScope {
    #[must_use]
    pub(crate) fn new(unit: &str, mount: &Path, targets: &Targets) -> Self {
        let target = targets
            .cgroups
            .iter()
            .find(|t| t.dir.file_name().is_some_and(|n| n == unit))
            .map(|t| t.dir.clone());
        Self {
            unit: unit.to_owned(),
            mount: mount.to_path_buf(),
            reported: Arc::default(),
            target,
        }
    }

    /// systemd's `ControlGroup` of the unit; an empty one (no processes now) changes nothing.
    pub(crate) fn report(&self, control_group: &str) {
        if control_group.is_empty() || control_group.contains("/../") {
            return;
        }
        let Ok(mut known) = self.reported.lock() else {
            return;
        };
        if known.as_deref() != Some(control_group) {
            let dir = self.mount.join(control_group.trim_start_matches('/'));
            tracing::info!(unit = %self.unit, control_group, "restarts of {} are asked for only by sockets created in its cgroup {} (systemd's ControlGroup); other sockets' failures are killed, never restart it",
                self.unit, dir.display());
            *known = Some(control_group.to_owned());
        }
    }

    /// Whether systemd has told us the unit's cgroup yet.
    #[must_use]
    pub(crate) fn known(&self) -> bool {
        self.reported.lock().is_ok_and(|k| k.is_some())
    }

    /// The unit's cgroup directory now, and where the path came from.
    #[must_use]
    pub(crate) fn dir(&self) -> Option<(PathBuf, &'static str)> {
        let reported = self.reported.lock().ok().and_then(|k| k.clone());
        match (reported, &self.target) {
            (Some(cg), _) => Some((self.mount.join(cg.trim_start_matches('/')), "systemd")),
            (None, Some(t)) => Some((t.clone(), "target")),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::CgroupTarget;

    fn targets(dirs: &[&str]) -> Targets {
        Targets {
            cgroups: dirs
                .iter()
                .map(|d| CgroupTarget {
                    dir: PathBuf::from(d),
                    key: d.trim_start_matches("/sys/fs/cgroup").to_owned(),
                })
                .collect(),
            ..Targets::default()
        }
    }

    #[test]
    fn systemd_wins_over_the_target_and_an_empty_report_keeps_the_last() {
        let m = Path::new("/sys/fs/cgroup");
        let t = targets(&[
            "/sys/fs/cgroup/system.slice/kube-proxy.service",
            "/sys/fs/cgroup/system.slice/kubelet.service",
        ]);
        let s = UnitScope::new("kubelet.service", m, &t);
        assert_eq!(
            s.dir(),
            Some((
                PathBuf::from("/sys/fs/cgroup/system.slice/kubelet.service"),
                "target"
            ))
        );
        s.report("/kube.slice/kubelet.service");
        s.report(""); // stopped: no cgroup now
        assert!(s.known());
        assert_eq!(
            s.dir(),
            Some((
                PathBuf::from("/sys/fs/cgroup/kube.slice/kubelet.service"),
                "systemd"
            ))
        );
        let none = UnitScope::new("kubelet.service", m, &targets(&["/sys/fs/cgroup/x"]));
        assert_eq!(
            none.dir(),
            None,
            "no target is the unit's, systemd not asked yet"
        );
    }
}
