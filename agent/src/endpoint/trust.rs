//! Which process named `kubelet` may choose the endpoint lifeline follows. A name and a
//! command line are anyone's to pick, so discovery accepts only a process that runs as root
//! (real and effective uid 0) in kubelet's cgroup: the default target
//! /system.slice/kubelet.service, where systemd puts the unit's main process, or one of the
//! agent's `--cgroup` targets, or a cgroup below one. Both facts come from /proc and need no
//! ptrace access: `/proc/PID/status` and `/proc/PID/cgroup` are world-readable.

use std::path::{Path, PathBuf};

use crate::settings::DEFAULT_CGROUP;

/// A process named `kubelet` that discovery did not trust, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ignored {
    pub pid: u32,
    /// `/proc/PID/stat` field 22: with `pid`, names the process across pid reuse.
    pub start: u64,
    /// `REAL/EFFECTIVE`.
    pub uid: String,
    /// Its cgroup v2 path, as /proc/PID/cgroup prints it.
    pub cgroup: String,
    pub why: String,
}

/// Kubelet's cgroups: their paths from the hierarchy's root and their directories here.
#[derive(Clone, Debug)]
pub(crate) struct Trust {
    cgroups: Vec<(String, PathBuf)>,
}

impl Trust {
    /// The default kubelet cgroup and every `--cgroup` target (a path relative to the
    /// cgroup2 mount, absolute under it, or as /proc/PID/cgroup prints it).
    #[must_use]
    pub(crate) fn new(targets: &[PathBuf]) -> Self {
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mount = crate::node::mounts::mount_point_of(&info, "cgroup2")
            .unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup"));
        let mut cgroups: Vec<(String, PathBuf)> = Vec::new();
        for t in
            std::iter::once(Path::new(DEFAULT_CGROUP)).chain(targets.iter().map(PathBuf::as_path))
        {
            let rel = t.strip_prefix(&mount).unwrap_or(t);
            let rel = rel.strip_prefix("/").unwrap_or(rel);
            let key = format!("/{}", rel.display());
            if !cgroups.iter().any(|(k, _)| *k == key) {
                cgroups.push((key, mount.join(rel)));
            }
        }
        Self { cgroups }
    }

    /// Whether process `pid` (started at `start`) may choose the endpoint. None when its
    /// /proc entries cannot be read (it exited): no candidate at all.
    #[must_use]
    pub(crate) fn judge(&self, pid: u32, start: u64) -> Option<Result<(), Ignored>> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let (real, effective) = uids(&status)?;
        let path = v2_path(&cgroup).unwrap_or_default().to_owned();
        let mut why = Vec::new();
        if (real, effective) != (0, 0) {
            why.push(format!(
                "runs as uid {real} (effective {effective}), not root"
            ));
        }
        if !self.holds(&path, pid) {
            let keys: Vec<&str> = self.cgroups.iter().map(|(k, _)| k.as_str()).collect();
            why.push(format!(
                "its cgroup {path:?} is not kubelet's ({})",
                keys.join(", ")
            ));
        }
        Some(if why.is_empty() {
            Ok(())
        } else {
            Err(Ignored {
                pid,
                start,
                uid: format!("{real}/{effective}"),
                cgroup: path,
                why: why.join(" and "),
            })
        })
    }

    /// The ids (directory inode numbers, as `sock_diag` reports a socket's cgroup) of
    /// kubelet's cgroups and their subtrees now: a socket created in one is kubelet's.
    #[must_use]
    pub(crate) fn ids(&self) -> std::collections::HashSet<crate::kernel::diag::CgroupId> {
        use std::os::unix::fs::MetadataExt as _;
        let mut out = std::collections::HashSet::new();
        let mut queue: Vec<(PathBuf, u32)> =
            self.cgroups.iter().map(|(_, d)| (d.clone(), 0)).collect();
        // A unit's subtree is a handful of cgroups; the bounds stop a pathological tree.
        while let Some((dir, depth)) = queue.pop() {
            if out.len() >= 4096 {
                break;
            }
            let Ok(m) = std::fs::metadata(&dir) else {
                continue;
            };
            out.insert(crate::kernel::diag::CgroupId(m.ino()));
            if depth < 8
                && let Ok(rd) = std::fs::read_dir(&dir)
            {
                queue.extend(
                    rd.filter_map(Result::ok)
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| (e.path(), depth + 1)),
                );
            }
        }
        out
    }

    /// `path` is one of kubelet's cgroups or below one. Inside a cgroup namespace (a pod),
    /// /proc/PID/cgroup shows a process outside it as `/../..`, relative to our own
    /// cgroup: then the pid is looked for in the `cgroup.procs` of the cgroups' subtrees.
    fn holds(&self, path: &str, pid: u32) -> bool {
        if path.starts_with("/..") {
            return self.cgroups.iter().any(|(_, dir)| in_subtree(dir, pid, 0));
        }
        self.cgroups.iter().any(|(key, _)| under(path, key))
    }
}

fn under(path: &str, key: &str) -> bool {
    path.strip_prefix(key)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether `pid` is in `dir`'s cgroup.procs or a descendant's (a unit's subtree is a
/// handful of cgroups; the depth bound only stops a pathological tree).
fn in_subtree(dir: &Path, pid: u32, depth: u32) -> bool {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    if procs.lines().any(|l| l.trim().parse() == Ok(pid)) {
        return true;
    }
    depth < 8
        && std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .any(|e| in_subtree(&e.path(), pid, depth + 1))
        })
}

/// Real and effective uid from `/proc/PID/status` (`Uid: real effective saved fs`).
#[must_use]
pub(super) fn uids(status: &str) -> Option<(u32, u32)> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(str::parse::<u32>);
    Some((ids.next()?.ok()?, ids.next()?.ok()?))
}

/// The cgroup v2 line (`0::PATH`) of `/proc/PID/cgroup`; hybrid nodes list v1 ones too.
#[must_use]
pub(super) fn v2_path(cgroup: &str) -> Option<&str> {
    cgroup.lines().find_map(|l| l.strip_prefix("0::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_and_the_v2_cgroup_line() {
        let status = "Name:\tkubelet\nUmask:\t0022\nUid:\t65534\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
        assert_eq!(uids(status), Some((65534, 0)));
        assert_eq!(uids("Name:\tx\n"), None);
        let hybrid = "12:memory:/system.slice\n1:name=systemd:/system.slice/kubelet.service\n0::/system.slice/kubelet.service\n";
        assert_eq!(v2_path(hybrid), Some("/system.slice/kubelet.service"));
        assert_eq!(v2_path("1:cpu:/\n"), None);
    }

    #[test]
    fn kubelets_cgroup_and_below_only() {
        let t = Trust::new(&[PathBuf::from("/sys/fs/cgroup/lab-1")]);
        let keys: Vec<&str> = t.cgroups.iter().map(|(k, _)| k.as_str()).collect();
        assert!(keys.contains(&"/system.slice/kubelet.service"), "{keys:?}");
        assert!(t.holds("/system.slice/kubelet.service", 1));
        assert!(t.holds("/system.slice/kubelet.service/sub", 1));
        assert!(
            !t.holds("/system.slice/kubelet.service2", 1),
            "a prefix is no parent"
        );
        assert!(!t.holds("/user.slice/user-1000.slice", 1));
        assert!(!t.holds("", 1));
    }

    /// Inside a cgroup namespace the path is relative (`/../..`): the pid is looked for in
    /// the `cgroup.procs` files of kubelet's cgroup and its children (here a plain tree).
    #[test]
    fn outside_our_cgroup_namespace_by_cgroup_procs() {
        let root = std::env::temp_dir().join(format!("lifeline-trust-{}", std::process::id()));
        let unit = root.join("system.slice/kubelet.service");
        std::fs::create_dir_all(unit.join("child")).unwrap();
        std::fs::write(unit.join("cgroup.procs"), "812\n").unwrap();
        std::fs::write(unit.join("child/cgroup.procs"), "900\n901\n").unwrap();
        std::fs::write(root.join("cgroup.procs"), "77\n").unwrap();
        let t = Trust {
            cgroups: vec![("/system.slice/kubelet.service".into(), unit)],
        };
        assert!(t.holds("/../../system.slice/kubelet.service", 812));
        assert!(t.holds("/../../system.slice/kubelet.service/child", 901));
        assert!(
            !t.holds("/../../user.slice", 77),
            "the parent's processes are not kubelet's"
        );
        assert!(!t.holds("/../..", 8), "not listed anywhere");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
