//! Who owns an endpoint client's socket, for its kill budget: the cgroup the socket was made
//! in (`INET_DIAG_CGROUP_ID`, the cgroup2 directory's inode), named by its path and collapsed
//! to what one party controls (`collapse`). Only root makes cgroups outside a delegated
//! subtree, and systemd delegates only to a unit (a user's manager is `user@UID.service`
//! under that user's slice), so a local user's processes are all in one group, whatever
//! units or scopes its own manager makes for it.

use std::{
    collections::{HashMap, VecDeque},
    os::unix::fs::MetadataExt as _,
    path::PathBuf,
};

/// At most this many cgroup directories are read to name one batch's sockets: a node has
/// hundreds; a user who makes a hundred thousand under its own delegated subtree makes its
/// own sockets unnamed (`(cgroup unknown)`), never another owner's.
const MAX_WALK: usize = 50_000;

/// The group a cgroup path (from the hierarchy's root) belongs to, first match from the
/// root down:
/// - a user's slice, `/user.slice/user-UID.slice`: everything that user's sessions and
///   manager run;
/// - a pod's cgroup under kubelet's `kubepods` tree: `pod<UID>` (cgroupfs driver) or
///   `kubepods[-QOS]-pod<UID>.slice` (systemd driver): every container of the pod
///   (`GetPodContainerName` in
///   <https://github.com/kubernetes/kubernetes/blob/v1.33.0/pkg/kubelet/cm/pod_container_manager_linux.go>);
/// - a unit, the first `NAME.service` or `NAME.scope` (`/system.slice/kube-proxy.service`,
///   a container runtime's `docker-ID.scope`): with everything it delegates below it;
/// - else the top-level cgroup (`/NAME`), which only root makes; `/` for the root itself.
///
/// Every level above a user's slice or `kubepods` must be a slice (a node may nest them in
/// one of its own, as the lab does), so a user cannot name a directory of its own subtree
/// to look like another group.
#[must_use]
pub(super) fn collapse(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let prefix = |i: usize| format!("/{}", parts[..=i].join("/"));
    let slices_above = |i: usize| parts[..i].iter().all(is_slice);
    let kubepods = parts
        .iter()
        .position(|p| *p == "kubepods" || *p == "kubepods.slice")
        .filter(|k| slices_above(*k));
    for (i, part) in parts.iter().enumerate() {
        if *part == "user.slice" && slices_above(i) && parts.get(i + 1).is_some_and(is_user) {
            return prefix(i + 1);
        }
        if kubepods.is_some_and(|k| i > k) && is_pod(part) {
            return prefix(i);
        }
        #[allow(clippy::case_sensitive_file_extension_comparisons)] // systemd's are
        if part.ends_with(".service") || part.ends_with(".scope") {
            return prefix(i);
        }
    }
    parts
        .first()
        .map_or_else(|| "/".to_owned(), |p| format!("/{p}"))
}

#[allow(clippy::case_sensitive_file_extension_comparisons)] // systemd's names are
fn is_slice(part: &&str) -> bool {
    part.ends_with(".slice")
}

/// `user-UID.slice`.
fn is_user(part: &&str) -> bool {
    part.strip_prefix("user-")
        .and_then(|p| p.strip_suffix(".slice"))
        .is_some_and(|uid| !uid.is_empty() && uid.bytes().all(|b| b.is_ascii_digit()))
}

/// A pod's cgroup as kubelet names it: `pod<UID>` or `kubepods[-QOS]-pod<UID>.slice`, the
/// UID a static pod's 32 hex digits or the API server's UUID (dashes turned `_` by the
/// systemd driver).
fn is_pod(part: &&str) -> bool {
    let uid = part.strip_prefix("pod").or_else(|| {
        part.strip_suffix(".slice")?
            .rsplit_once("-pod")
            .map(|(_, u)| u)
    });
    uid.is_some_and(|u| {
        (32..=36).contains(&u.len())
            && u.bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b'-' || b == b'_')
    })
}

/// The groups of one batch's sockets, found as cheaply as the node allows: the owner's
/// `/proc/PID/cgroup` checked against the id (a cgroup's id is its directory's inode, never
/// reused while the node runs), else one breadth-first walk of the hierarchy shared by the
/// whole batch and bounded (inside a cgroup namespace, as in the pod, `/proc/PID/cgroup`
/// names other processes' cgroups relative to ours, `/../..`, so only the walk can).
pub(super) struct Groups {
    /// The cgroup v2 hierarchy's root as mounted here; None: no root visible.
    mount: Option<PathBuf>,
    /// Each id seen and its group.
    known: HashMap<u64, String>,
    /// The walk's directories still to read, from the root; empty once done.
    queue: VecDeque<PathBuf>,
    walked: usize,
}

impl Groups {
    /// Finds the hierarchy's root in `/proc/self/mountinfo`.
    #[must_use]
    pub(super) fn new() -> Self {
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mount = crate::watch::cgroup::root::visible_root(&info);
        Self::at(mount)
    }

    pub(super) fn at(mount: Option<PathBuf>) -> Self {
        Self {
            queue: mount.iter().cloned().collect(),
            mount,
            known: HashMap::new(),
            walked: 0,
        }
    }

    /// The group of the cgroup with id `id`; `pid`: the socket's recorded owner, a hint
    /// only (it may have moved, exited, or its pid be another process's now: the id
    /// decides). None when the cgroup cannot be named.
    pub(super) fn group(&mut self, id: u64, pid: u32) -> Option<String> {
        if let Some(g) = self.known.get(&id) {
            return Some(g.clone());
        }
        if let Some(g) = self.hint(id, pid) {
            self.known.insert(id, g.clone());
            return Some(g);
        }
        self.walk_to(id)
    }

    fn hint(&self, id: u64, pid: u32) -> Option<String> {
        let mount = self.mount.as_ref()?;
        let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
        let rel = path.strip_prefix('/')?;
        if rel.split('/').any(|c| c == ".." || c == ".") {
            return None;
        }
        let meta = std::fs::metadata(mount.join(rel)).ok()?;
        (meta.ino() == id).then(|| collapse(path))
    }

    /// Walks on until `id` is met or the bound is reached.
    fn walk_to(&mut self, id: u64) -> Option<String> {
        let mount = self.mount.clone()?;
        while let Some(dir) = self.queue.pop_front() {
            if self.walked >= MAX_WALK {
                self.queue.clear();
                break;
            }
            self.walked += 1;
            let Ok(meta) = std::fs::metadata(&dir) else {
                continue;
            };
            let rel = dir.strip_prefix(&mount).unwrap_or(&dir);
            let group = collapse(&format!("/{}", rel.display()));
            self.known.insert(meta.ino(), group.clone());
            if let Ok(entries) = std::fs::read_dir(&dir) {
                self.queue.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
            if meta.ino() == id {
                return Some(group);
            }
        }
        None
    }
}

impl Default for Groups {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
