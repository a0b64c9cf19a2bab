//! Finding the proxy on kubelet's loopback endpoint and reading its upstream list.

use std::{net::SocketAddr, path::PathBuf};

use super::{Learned, Proxy, haproxy, k3s, listener, nginx};

/// Finds the proxy listening on `listen` and its upstreams (`api_ports`: where to look for
/// its connections when its configuration says nothing). `Err` is one line naming what was
/// found instead: no listener, an untrusted one, a proxy whose upstreams are unknown.
///
/// Only a listening socket owned by root is trusted: any user may listen on 6443 first (a
/// port above 1024), and kubelet's connection would then reach it, but only root makes a
/// socket of uid 0 (`sock_i_uid` keeps the creator's; nginx and haproxy bind as root before
/// they drop privileges).
///
/// # Errors
/// As above.
pub fn find(listen: SocketAddr, api_ports: &[u16]) -> Result<Proxy, String> {
    let socks = listener::listening_on(listen)
        .map_err(|e| format!("cannot list the sockets listening on {listen}: {e}"))?;
    let (trusted, ignored): (Vec<_>, Vec<_>) = socks.into_iter().partition(|s| s.uid == 0);
    for s in &ignored {
        tracing::warn!(target: "lifeline::endpoint", listen = %s.local, uid = s.uid, cgroup_id = ?s.cgroup_id,
            "ignoring the listener on {} owned by uid {}: only a root-owned listener names kubelet's proxy", s.local, s.uid);
    }
    let Some(sock) = trusted.first() else {
        return Err(match ignored.first() {
            Some(s) => format!(
                "the listener on {} is owned by uid {}, not root: not trusted as kubelet's proxy",
                s.local, s.uid
            ),
            None => format!("nothing listens on {listen} in this network namespace"),
        });
    };
    let id = sock
        .cgroup_id
        .ok_or_else(|| format!("the kernel gives no cgroup id for the listener on {listen}"))?;
    let (dir, cgroup) = listener::cgroup_dir(id)
        .ok_or_else(|| format!("the listener on {listen} is in cgroup id {id}, which is not found under the cgroup2 mount"))?;
    if cgroup == "/" {
        return Err(format!(
            "the listener on {listen} is in the root cgroup: no service's, not trusted as kubelet's proxy"
        ));
    }
    let pid = listener::main_process(&dir, |c| {
        c == "nginx" || c == "haproxy" || k3s::program(c).is_some()
    })
    .ok_or_else(|| {
        format!("the listener on {listen} is in cgroup {cgroup}, which lists no process")
    })?;
    let comm = listener::comm(pid).unwrap_or_default();
    let (name, from_config) = read_config(pid, &comm, listen.port());
    let mut proxy = Proxy {
        listen,
        name,
        pid,
        cgroup_id: id,
        cgroup,
        upstreams: Vec::new(),
        learned: Learned::Connections,
    };
    match from_config {
        Some((ups, files)) if !ups.is_empty() => {
            proxy.upstreams = ups;
            proxy.learned = Learned::Config(files);
        }
        _ => {
            let peers = listener::upstream_peers(id, api_ports).unwrap_or_default();
            if peers.is_empty() {
                return Err(format!(
                    "{} (pid {pid}, cgroup {}) listens on {listen}, but its upstreams are unknown: {} and it has no established connection on the API ports {api_ports:?}",
                    proxy.name,
                    proxy.cgroup,
                    from_config.map_or_else(
                        || "it is no proxy lifeline reads the configuration of (nginx, haproxy, k3s, rke2)".to_owned(),
                        |(_, files)| format!("its configuration ({}) names none for port {}", names(&files), listen.port())
                    )
                ));
            }
            proxy.upstreams = peers
                .iter()
                .map(|p| (p.ip().to_string(), p.port()))
                .collect();
        }
    }
    Ok(proxy)
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

type Upstreams = (Vec<(String, u16)>, Vec<PathBuf>);

/// The proxy's name and, for a known one, the upstreams its configuration lists for `port`.
fn read_config(pid: u32, comm: &str, port: u16) -> (String, Option<Upstreams>) {
    let args = listener::cmdline(pid);
    let root = listener::root_of(pid);
    let flag = |f: &str| -> Vec<PathBuf> {
        args.windows(2)
            .filter(|w| w[0] == f)
            .map(|w| PathBuf::from(&w[1]))
            .collect()
    };
    if comm == "nginx" {
        let main = flag("-c")
            .pop()
            .unwrap_or_else(|| PathBuf::from("/etc/nginx/nginx.conf"));
        return ("nginx".into(), Some(nginx::upstreams(&root, &main, port)));
    }
    if comm == "haproxy" {
        let mut cfgs = flag("-f");
        if cfgs.is_empty() {
            cfgs.push(PathBuf::from("/etc/haproxy/haproxy.cfg"));
        }
        return (
            "haproxy".into(),
            Some(haproxy::upstreams(&root, &cfgs, port)),
        );
    }
    if let Some(program) = k3s::program(comm) {
        let dir = k3s::data_dir(program, &args);
        return (program.into(), Some(k3s::upstreams(&root, program, &dir)));
    }
    (comm.to_owned(), None)
}

/// The proxy's upstreams now: its configuration read again (a reload changes it), or its
/// connections looked at again. `None` when its process is gone (found again by `find`).
#[must_use]
pub fn reread(p: &Proxy, api_ports: &[u16]) -> Option<Vec<(String, u16)>> {
    let comm = listener::comm(p.pid)?;
    match &p.learned {
        Learned::Config(_) => {
            let (_, found) = read_config(p.pid, &comm, p.listen.port());
            found.map(|(ups, _)| ups)
        }
        Learned::Connections => listener::upstream_peers(p.cgroup_id, api_ports)
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| v.iter().map(|a| (a.ip().to_string(), a.port())).collect()),
    }
}
