//! What lifeline watches, from the watch settings: cgroups, process names, and the clients of
//! the API endpoint. Explicit targets replace the default; the default for a node is
//! kubelet's unit cgroup plus every client of the endpoint.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use lifeline_common::{
    COMM_LEN,
    watch::{CGROUP_PATH_LEN, WATCH_CGROUPS, WATCH_COMMS, WATCH_ENDPOINT},
};

use super::run::Watch;

/// Default cgroup target: kubelet's systemd unit.
pub(crate) const DEFAULT_CGROUP: &str = "system.slice/kubelet.service";

/// A cgroup target: its directory, and its path from the hierarchy's root as the kernel's
/// `cgroup_mkdir` tracepoint prints it (the key the probe matches new cgroups with).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CgroupTarget {
    pub dir: PathBuf,
    pub key: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Targets {
    pub cgroups: Vec<CgroupTarget>,
    pub comms: Vec<String>,
    /// Every socket whose peer is one of the endpoint's addresses, whoever owns it.
    pub endpoint_clients: bool,
}

impl Targets {
    /// The targets `--cgroup`, `--comm` and `--endpoint-clients` name, or the node default
    /// when none is given. `mount` is the cgroup2 mount point, `mount_root` the hierarchy
    /// path mounted there (`/` unless inside a cgroup namespace).
    ///
    /// # Errors
    /// A process name or cgroup path the kernel side cannot match, named in one line.
    pub(crate) fn new(args: &Watch, mount: &Path, mount_root: &Path) -> Result<Self> {
        let explicit = !args.cgroups.is_empty() || !args.comms.is_empty() || args.endpoint_clients;
        let (cgroups, endpoint_clients) = if explicit {
            (args.cgroups.clone(), args.endpoint_clients)
        } else {
            (vec![PathBuf::from(DEFAULT_CGROUP)], true)
        };
        if let Some(c) = args
            .comms
            .iter()
            .find(|c| c.is_empty() || c.len() >= COMM_LEN)
        {
            bail!(
                "invalid --comm {c:?}: a process name is 1 to 15 bytes (the kernel's TASK_COMM_LEN - 1)"
            );
        }
        let cgroups = cgroups
            .iter()
            .map(|c| cgroup_target(mount, mount_root, c))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            cgroups,
            comms: args.comms.clone(),
            endpoint_clients,
        })
    }

    /// The probe's `WatchConfig::flags`.
    #[must_use]
    pub(crate) fn flags(&self) -> u32 {
        let mut f = 0;
        if !self.cgroups.is_empty() {
            f |= WATCH_CGROUPS;
        }
        if !self.comms.is_empty() {
            f |= WATCH_COMMS;
        }
        if self.endpoint_clients {
            f |= WATCH_ENDPOINT;
        }
        f
    }

    /// One word per target, for the ready event and `check`.
    #[must_use]
    pub(crate) fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .cgroups
            .iter()
            .map(|c| format!("cgroup {}", c.key))
            .collect();
        out.extend(self.comms.iter().map(|c| format!("comm {c}")));
        if self.endpoint_clients {
            out.push("endpoint clients".to_owned());
        }
        out
    }
}

/// `--cgroup` is absolute under the mount, or relative to it as /proc/PID/cgroup prints it.
fn cgroup_target(mount: &Path, mount_root: &Path, arg: &Path) -> Result<CgroupTarget> {
    let rel = arg.strip_prefix(mount).unwrap_or(arg);
    let rel = rel.strip_prefix("/").unwrap_or(rel);
    if rel
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        bail!(
            "invalid --cgroup {}: a cgroup path has no `.` or `..`",
            arg.display()
        );
    }
    let dir = mount.join(rel);
    let key = Path::new("/")
        .join(mount_root.strip_prefix("/").unwrap_or(mount_root))
        .join(rel);
    let key = key.to_string_lossy().into_owned();
    if key.len() >= CGROUP_PATH_LEN {
        bail!(
            "invalid --cgroup {}: longer than {} bytes, which the probe cannot match",
            arg.display(),
            CGROUP_PATH_LEN - 1
        );
    }
    Ok(CgroupTarget { dir, key })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_absolute_and_proc_style_paths_name_the_same_target() {
        let m = Path::new("/sys/fs/cgroup/unified");
        let want = CgroupTarget {
            dir: PathBuf::from("/sys/fs/cgroup/unified/system.slice/kubelet.service"),
            key: "/system.slice/kubelet.service".into(),
        };
        for arg in [
            "system.slice/kubelet.service",
            "/system.slice/kubelet.service",
            "/sys/fs/cgroup/unified/system.slice/kubelet.service",
        ] {
            assert_eq!(
                cgroup_target(m, Path::new("/"), Path::new(arg)).unwrap(),
                want
            );
        }
    }

    #[test]
    fn a_mount_inside_a_cgroup_namespace_keeps_the_hierarchy_prefix() {
        let t = cgroup_target(
            Path::new("/sys/fs/cgroup"),
            Path::new("/kubepods.slice"),
            Path::new("x.service"),
        )
        .unwrap();
        assert_eq!(t.key, "/kubepods.slice/x.service");
    }

    #[test]
    fn dot_dot_and_overlong_paths_are_refused() {
        let m = Path::new("/sys/fs/cgroup");
        let e = cgroup_target(m, Path::new("/"), Path::new("a/../b")).unwrap_err();
        assert!(e.to_string().contains("invalid --cgroup"), "{e}");
        let long = "x".repeat(300);
        let e = cgroup_target(m, Path::new("/"), Path::new(&long)).unwrap_err();
        assert!(e.to_string().contains("longer than 255 bytes"), "{e}");
    }
}
