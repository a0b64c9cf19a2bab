//! The proxy's identity, checked at every re-read before its files are: a bare pid names
//! whoever has that number now (the proxy restarted and someone else got its old pid), so
//! the pid must still have the start time it had (`/proc/PID/stat` field 22), still be in
//! the proxy's cgroup (the same directory: its inode is the cgroup id), a listener of that
//! cgroup must still be on the address, and kubelet's connections there must still be served
//! from it. Anything else: the proxy is found again from kubelet's connection (`find`).

use std::collections::HashSet;

use super::{Learned, Proxy, config, listener, served};
use crate::kernel::diag::CgroupId;

/// What a re-read found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reread {
    /// The same proxy; its upstreams now.
    Upstreams(Vec<(String, u16)>),
    /// The same proxy, whose list could not be read: the last good one stays (why).
    Failed(String),
    /// It is no longer the proxy (why): look for it again.
    Changed(String),
}

/// Why `p` is no longer kubelet's proxy, if it is not.
fn changed(p: &Proxy, kubelet: &HashSet<CgroupId>) -> Option<String> {
    let who = format!("{} (pid {})", p.name, p.pid);
    match listener::start_time(p.pid) {
        None => return Some(format!("{who} exited")),
        Some(s) if s != p.start => {
            return Some(format!(
                "pid {} is another process now (started at tick {s}, the proxy at {}): the pid was reused",
                p.pid, p.start
            ));
        }
        Some(_) => {}
    }
    let same_dir = std::fs::metadata(&p.dir)
        .is_ok_and(|m| std::os::unix::fs::MetadataExt::ino(&m) == p.cgroup_id.0);
    if !same_dir || !listener::procs(&p.dir).contains(&p.pid) {
        return Some(format!("{who} is no longer in cgroup {}", p.cgroup));
    }
    let listens = listener::listening_on(p.listen)
        .is_ok_and(|l| l.iter().any(|s| s.cgroup_id == Some(p.cgroup_id)));
    if !listens {
        return Some(format!("{who} no longer listens on {}", p.listen));
    }
    let elsewhere = served::served(p.listen, kubelet).ok().and_then(|conns| {
        conns
            .into_iter()
            .find(|c| c.server.cgroup_id != Some(p.cgroup_id))
    });
    elsewhere.map(|c| {
        format!(
            "kubelet's connection from {} to {} is served from another cgroup (id {}) now",
            c.kubelet.local,
            p.listen,
            c.server.cgroup_id.unwrap_or(CgroupId(0))
        )
    })
}

/// The proxy's upstreams now (a reload changes them), once its identity holds.
#[must_use]
pub(crate) fn reread(p: &Proxy, api_ports: &[u16], kubelet: &HashSet<CgroupId>) -> Reread {
    if let Some(why) = changed(p, kubelet) {
        return Reread::Changed(why);
    }
    match &p.learned {
        Learned::Config(_) => match config::read(p.pid, &p.name, p.listen.port()) {
            Some(Ok((ups, _))) => Reread::Upstreams(ups),
            Some(Err(e)) => Reread::Failed(e.to_string()),
            None => Reread::Failed(format!("{} is no proxy lifeline reads", p.name)),
        },
        Learned::Connections => match listener::upstream_peers(p.cgroup_id, api_ports) {
            Ok(v) if !v.is_empty() => {
                Reread::Upstreams(v.iter().map(|a| (a.ip().to_string(), a.port())).collect())
            }
            Ok(_) => Reread::Failed("it has no upstream connection now".into()),
            Err(e) => Reread::Failed(e.to_string()),
        },
    }
}
