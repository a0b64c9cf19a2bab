//! The node-local API proxies' configurations, as kubespray writes them on every worker
//! (roles/kubernetes/node/templates/loadbalancer/nginx.conf.j2 and haproxy.cfg.j2):
//! `127.0.0.1:6443` in front of the control-plane nodes, `least_conn`/`leastconn`,
//! nginx's `proxy_timeout 10m` and `proxy_connect_timeout 1s`.
//!
//! Two departures, both forced by the lab: nginx loads its stream module by path (Debian's
//! `libnginx-mod-stream` is a dynamic module, loaded from /etc/nginx/modules-enabled, which
//! the lab does not use), and haproxy's health check is a TCP connect instead of kubespray's
//! `httpchk GET /healthz` over TLS (the lab's API servers speak cleartext HTTP/2 only).

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use anyhow::{Context as _, Result};

use crate::util::TempDir;

/// Where the proxy listens: kubelet's `server:` on such nodes.
pub const PROXY_LISTEN: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(Ipv4Addr::LOCALHOST),
    crate::lab::SERVER_PORT,
);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyKind {
    Nginx,
    Haproxy,
}

impl ProxyKind {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Nginx => "nginx",
            Self::Haproxy => "haproxy",
        }
    }
}

/// Where Debian's `libnginx-mod-stream` puts the stream module.
pub const NGINX_STREAM_MODULE: &str = "/usr/lib/nginx/modules/ngx_stream_module.so";

/// nginx.conf: the stream proxy only (kubespray's http block serves its health check port,
/// which nothing in the lab asks), listening on every address of `listens`. `pid` in the
/// proxy's own directory, logs to stderr.
#[must_use]
pub fn nginx(dir: &Path, listens: &[SocketAddr], upstreams: &[SocketAddr]) -> String {
    let mut servers = String::new();
    for u in upstreams {
        let _ = writeln!(servers, "    server {u};");
    }
    let mut listen = String::new();
    for l in listens {
        let _ = writeln!(listen, "    listen        {l};");
    }
    format!(
        "load_module {NGINX_STREAM_MODULE};
daemon off;
pid {pid};
error_log stderr notice;
worker_processes 2;
worker_rlimit_nofile 130048;
worker_shutdown_timeout 10s;

events {{
  multi_accept on;
  use epoll;
  worker_connections 16384;
}}

stream {{
  upstream kube_apiserver {{
    least_conn;
{servers}  }}

  server {{
{listen}    proxy_pass    kube_apiserver;
    proxy_timeout 10m;
    proxy_connect_timeout 1s;
  }}
}}
",
        pid = dir.join("nginx.pid").display(),
    )
}

/// haproxy.cfg: kubespray's defaults and its `kube_api_frontend`/`kube_api_backend` in TCP
/// mode (its health-check frontend left out, as nginx's).
#[must_use]
pub fn haproxy(listens: &[SocketAddr], upstreams: &[SocketAddr]) -> String {
    let mut servers = String::new();
    for (i, u) in upstreams.iter().enumerate() {
        let _ = writeln!(servers, "  server api{} {u} check", i + 1);
    }
    haproxy_with(listens, "", &servers)
}

/// haproxy.cfg naming the API servers by `name` (`HOST:PORT`), re-resolved at run time
/// through the DNS server `dns` (a `resolvers` section, as kubeadm's HA guide allows for a
/// DNS-named control plane). `init-addr none`: the node's own resolver does not know the
/// name, so the server waits for the first answer instead of failing the start.
/// `hold valid 1s`: an answer is asked again every second, so a change is seen at once.
#[must_use]
pub fn haproxy_resolving(listens: &[SocketAddr], name: &str, dns: SocketAddr) -> String {
    let resolvers = format!(
        "resolvers lab
    nameserver dns {dns}
    resolve_retries 3
    timeout resolve 1s
    timeout retry   1s
    hold valid      1s

"
    );
    let server =
        format!("  server api1 {name} check resolvers lab resolve-prefer ipv4 init-addr none\n");
    haproxy_with(listens, &resolvers, &server)
}

fn haproxy_with(listens: &[SocketAddr], resolvers: &str, servers: &str) -> String {
    let mut bind = String::new();
    for l in listens {
        let _ = writeln!(bind, "  bind {l}");
    }
    format!(
        "global
    maxconn                 4000

defaults
    mode                    http
    option                  dontlognull
    option                  redispatch
    retries                 5
    timeout http-request    5m
    timeout queue           5m
    timeout connect         30s
    timeout client          5m
    timeout server          15m
    timeout http-keep-alive 30s
    timeout check           30s
    maxconn                 4000

{resolvers}frontend kube_api_frontend
{bind}  mode tcp
  default_backend kube_api_backend

backend kube_api_backend
  mode tcp
  balance leastconn
  default-server inter 15s downinter 15s rise 2 fall 2 slowstart 60s maxconn 1000 maxqueue 256 weight 100
{servers}"
    )
}

/// Where the configuration of a `kind` proxy is kept in `dir`.
pub(crate) fn path(dir: &TempDir, kind: ProxyKind) -> String {
    let file = match kind {
        ProxyKind::Nginx => "nginx.conf",
        ProxyKind::Haproxy => "haproxy.cfg",
    };
    dir.path().join(file).display().to_string()
}

/// Writes the configuration of a `kind` proxy in `dir`, listening on `listens`:
/// `resolving` (`(HOST:PORT, DNS server)`, haproxy) names the servers so, else the list is
/// `upstreams`.
pub(crate) fn write(
    dir: &TempDir,
    kind: ProxyKind,
    (listens, upstreams): (&[SocketAddr], &[SocketAddr]),
    resolving: Option<&(String, SocketAddr)>,
) -> Result<()> {
    let text = match (kind, resolving) {
        (ProxyKind::Haproxy, Some((name, dns))) => haproxy_resolving(listens, name, *dns),
        (ProxyKind::Nginx, _) => nginx(dir.path(), listens, upstreams),
        (ProxyKind::Haproxy, None) => haproxy(listens, upstreams),
    };
    std::fs::write(path(dir, kind), text).context("writing the proxy's configuration")
}
