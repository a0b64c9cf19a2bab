//! Finding the proxy on kubelet's loopback endpoint: the process serving kubelet's own
//! connection (`served.rs`), if it is a node component (`component.rs`), and its upstream
//! list (`config.rs`, else its connections).

use std::{
    collections::{BTreeMap, HashSet},
    net::SocketAddr,
    path::PathBuf,
};

use super::{Learned, Proxy, component, config, listener, served};
use crate::kernel::diag::CgroupId;

/// What one look at the loopback endpoint found: the proxy or why none, and the servers of
/// kubelet's connections that were refused (one line each, for the caller to log once).
#[derive(Debug)]
pub(crate) struct ProxyLook {
    pub found: Result<Proxy, String>,
    pub refused: Vec<String>,
}

/// Finds the proxy serving kubelet's connections to `listen` (`kubelet`: the ids of
/// kubelet's cgroups), and its upstreams (`api_ports`: where to look for its connections
/// when its configuration says nothing).
#[must_use]
pub(crate) fn find(
    listen: SocketAddr,
    api_ports: &[u16],
    kubelet: &HashSet<CgroupId>,
) -> ProxyLook {
    let conns = match served::served_soon(listen, kubelet) {
        Ok(c) => c,
        Err(e) => {
            return ProxyLook {
                found: Err(format!(
                    "cannot list kubelet's connections to {listen}: {e}"
                )),
                refused: Vec::new(),
            };
        }
    };
    // The servers of kubelet's connections by cgroup (a neighbour with SO_REUSEPORT beside
    // the proxy takes some of them), the busiest first.
    let mut by_cgroup: BTreeMap<CgroupId, Vec<served::Served>> = BTreeMap::new();
    for c in conns {
        by_cgroup
            .entry(c.server.cgroup_id.unwrap_or(CgroupId(0)))
            .or_default()
            .push(c);
    }
    let mut groups: Vec<(CgroupId, Vec<served::Served>)> = by_cgroup.into_iter().collect();
    groups.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let mut refused = Vec::new();
    let mut found = None;
    for (id, conns) in &groups {
        match identify(listen, *id, conns) {
            Ok(p) if found.is_none() => found = Some(p),
            Ok(_) => {}
            Err(why) => refused.push(why),
        }
    }
    let found = match found {
        Some(mut p) => fill(&mut p, api_ports).map(|()| p),
        None if groups.is_empty() => Err(format!(
            "kubelet has no established connection to {listen} now (the proxy is the process serving kubelet's own connection, never merely a listener)"
        )),
        None => Err(refused.join("; ")),
    };
    ProxyLook { found, refused }
}

/// The proxy serving `conns` from cgroup `id`, or why it is refused.
fn identify(listen: SocketAddr, id: CgroupId, conns: &[served::Served]) -> Result<Proxy, String> {
    let server = &conns[0].server;
    let (dir, cgroup) = listener::cgroup_dir(id).ok_or_else(|| {
        format!("the server of kubelet's connection to {listen} is in cgroup id {id}, which is not found under the cgroup2 mount: refused")
    })?;
    let procs = listener::procs(&dir);
    // Its listener on the address, in the same cgroup (the accepted socket carries its).
    let listeners = listener::listening_on(listen)
        .map_err(|e| format!("cannot list the sockets listening on {listen}: {e}"))?;
    let lsock = listeners.iter().find(|l| l.cgroup_id == Some(id));
    // Where descriptors can be read, a process of the cgroup must hold that listener; the
    // proxy is then the cgroup's main process (nginx's and haproxy's master, which outlives
    // its workers' reloads), as it is where they cannot be read.
    let held = lsock.and_then(|l| served::holders(&procs, l.inode));
    let pid = match held {
        Some(h) if h.is_empty() => None,
        _ => listener::main_process(&dir, config::kind),
    };
    let who = |pid: Option<u32>| {
        pid.map_or_else(String::new, |p| {
            format!(
                " (pid {p}, {}, uid {})",
                listener::comm(p).unwrap_or_default(),
                server.uid
            )
        })
    };
    let component = component::classify(&cgroup).map_err(|why| {
        format!(
            "refused the server of kubelet's connection to {listen}{}: {why}",
            who(pid)
        )
    })?;
    if lsock.is_none() {
        return Err(format!(
            "the server of kubelet's connection to {listen}{} has no listener there in its cgroup {cgroup} now",
            who(pid)
        ));
    }
    let pid = pid.ok_or_else(|| {
        format!("the server of kubelet's connection to {listen} is in cgroup {cgroup}, where no process holds its listener")
    })?;
    let start = listener::start_time(pid)
        .ok_or_else(|| format!("kubelet's proxy pid {pid} exited while it was looked at"))?;
    let comm = listener::comm(pid).unwrap_or_default();
    Ok(Proxy {
        listen,
        name: config::kind(&comm).map_or(comm, str::to_owned),
        pid,
        start,
        cgroup_id: id,
        cgroup,
        dir,
        component,
        upstreams: Vec::new(),
        learned: Learned::Connections,
    })
}

/// The upstreams of `p`: its configuration's for its port, else its connections.
fn fill(p: &mut Proxy, api_ports: &[u16]) -> Result<(), String> {
    let from_config = config::read(p.pid, &p.name, p.listen.port());
    match from_config {
        Some(Ok((ups, files))) if !ups.is_empty() => {
            p.upstreams = ups;
            p.learned = Learned::Config(files);
            return Ok(());
        }
        Some(Err(e)) => return Err(format!("{p}: its configuration: {e}")),
        _ => {}
    }
    let peers = listener::upstream_peers(p.cgroup_id, api_ports).unwrap_or_default();
    if peers.is_empty() {
        return Err(format!(
            "{} (pid {}, {}) serves kubelet's connection to {}, but its upstreams are unknown: {} and it has no established connection on the API ports {api_ports:?}",
            p.name,
            p.pid,
            p.component,
            p.listen,
            from_config.map_or_else(
                || "it is no proxy lifeline reads the configuration of (nginx, haproxy, k3s, rke2)"
                    .to_owned(),
                |r| format!(
                    "its configuration ({}) names none for port {}",
                    names(&r.map(|(_, f)| f).unwrap_or_default()),
                    p.listen.port()
                )
            )
        ));
    }
    p.upstreams = peers
        .iter()
        .map(|a| (a.ip().to_string(), a.port()))
        .collect();
    Ok(())
}

fn names(files: &[PathBuf]) -> String {
    if files.is_empty() {
        return "no file readable".to_owned();
    }
    files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
