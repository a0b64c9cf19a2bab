//! Owners of sockets that predate the agent: the probe's connect hook never saw them,
//! so the socket inode is matched against every process's file descriptors, once.

use std::collections::HashMap;

/// What the walk found: pid and comm for each socket inode it could match, and how many
/// processes' descriptors it was not allowed to read. Listing /proc/PID/fd is a plain
/// permission check (root may), but reading each link is a ptrace check: a process whose
/// capabilities are not a subset of the agent's needs `CAP_SYS_PTRACE`
/// (`proc_fd_access_allowed()` in <https://github.com/torvalds/linux/blob/v6.18/fs/proc/base.c>,
/// `cap_ptrace_access_check()` in
/// <https://github.com/torvalds/linux/blob/v6.18/security/commoncap.c>).
#[derive(Default)]
pub(crate) struct Owners {
    pub by_inode: HashMap<u32, (u32, String)>,
    pub denied: usize,
}

impl Owners {
    /// One warning when some of `wanted` sockets have no owner because reads were refused.
    pub(crate) fn warn_unnamed(&self, wanted: usize) {
        let unnamed = wanted.saturating_sub(self.by_inode.len());
        if unnamed > 0 && self.denied > 0 {
            tracing::warn!(
                sockets = unnamed,
                processes_denied = self.denied,
                "sockets older than the agent have no known owner: reading other processes' /proc/PID/fd needs CAP_SYS_PTRACE; they are selected by cgroup and endpoint only (not --comm), and status shows no owner"
            );
        }
    }
}

/// pid and comm for each socket inode in `wanted`.
pub(crate) fn by_inode(wanted: &[u32]) -> Owners {
    let mut found = Owners::default();
    if wanted.is_empty() {
        return found;
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    let out = &mut found.by_inode;
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let link = match std::fs::read_link(fd.path()) {
                Ok(link) => link,
                // Every link of this process is refused alike.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    found.denied += 1;
                    break;
                }
                Err(_) => continue,
            };
            let inode = link
                .to_str()
                .and_then(|l| l.strip_prefix("socket:["))
                .and_then(|l| l.strip_suffix(']'))
                .and_then(|l| l.parse::<u32>().ok());
            if let Some(inode) = inode.filter(|i| wanted.contains(i)) {
                let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                out.entry(inode)
                    .or_insert((pid, comm.trim_end().to_owned()));
            }
        }
        if out.len() == wanted.len() {
            break;
        }
    }
    found
}
