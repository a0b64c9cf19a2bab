//! Owners of sockets that predate the agent: the probe's connect hook never saw them,
//! so the socket inode is matched against every process's file descriptors, once.

use std::collections::HashMap;

/// pid and comm for each socket inode in `wanted`.
pub fn by_inode(wanted: &[u32]) -> HashMap<u32, (u32, String)> {
    let mut out = HashMap::new();
    if wanted.is_empty() {
        return out;
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
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
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
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
    out
}
