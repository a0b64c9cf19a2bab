use std::path::{Path, PathBuf};

use super::*;
use crate::endpoint::proxy::files::Root;

/// kubeadm's docs/ha-considerations.md haproxy.cfg, its variables filled in (the local
/// frontend on 6443, the API servers on 6443).
const KUBEADM: &str = r"# /etc/haproxy/haproxy.cfg
#---------------------------------------------------------------------
# Global settings
#---------------------------------------------------------------------
global
    log stdout format raw local0
    daemon

defaults
    mode                    http
    log                     global
    option                  httplog
    option                  dontlognull
    option http-server-close
    option forwardfor       except 127.0.0.0/8
    option                  redispatch
    retries                 1
    timeout http-request    10s
    timeout queue           20s
    timeout connect         5s
    timeout client          35s
    timeout server          35s
    timeout http-keep-alive 10s
    timeout check           10s

#---------------------------------------------------------------------
# apiserver frontend which proxys to the control plane nodes
#---------------------------------------------------------------------
frontend apiserver
    bind *:6443
    mode tcp
    option tcplog
    default_backend apiserverbackend

#---------------------------------------------------------------------
# round robin balancing for apiserver
#---------------------------------------------------------------------
backend apiserverbackend
    option httpchk

    http-check connect ssl
    http-check send meth GET uri /healthz
    http-check expect status 200

    mode tcp
    balance     roundrobin

    server cp-1 198.51.100.2:6443 check verify none
    server cp-2 198.51.100.3:6443 check verify none
";

/// kubespray's haproxy.cfg.j2: a `listen`-less frontend on loopback and a stats listener.
const KUBESPRAY: &str = r"global
    maxconn 4000
    log 127.0.0.1 local0

listen stats
  bind :8081
  mode http
  stats enable

frontend kube_api_frontend
  bind 127.0.0.1:6443
  mode tcp
  option tcplog
  default_backend kube_api_backend

backend kube_api_backend
  mode tcp
  balance leastconn
  default-server inter 15s downinter 15s rise 2 fall 2 slowstart 60s maxconn 1000 maxqueue 256 weight 100
  option httpchk GET /healthz
  http-check expect status 200
  server cp-1 cp-1.lab:6443 check check-ssl verify none
";

fn root(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lifeline-haproxy-{name}-{}", std::process::id()));
    std::fs::create_dir_all(d.join("etc/haproxy/conf.d")).unwrap();
    d
}

#[test]
fn kubeadm_ha_guide() {
    let r = root("kubeadm");
    std::fs::write(r.join("etc/haproxy/haproxy.cfg"), KUBEADM).unwrap();
    let cfg = [PathBuf::from("/etc/haproxy/haproxy.cfg")];
    let (ups, read) = upstreams(&Root::at(&r).unwrap(), &cfg, 6443).unwrap();
    assert_eq!(
        ups,
        [
            ("198.51.100.2".to_owned(), 6443),
            ("198.51.100.3".to_owned(), 6443)
        ]
    );
    assert_eq!(read, cfg);
    assert!(
        upstreams(&Root::at(&r).unwrap(), &cfg, 8443)
            .unwrap()
            .0
            .is_empty()
    );
    std::fs::remove_dir_all(&r).unwrap();
}

/// `-f DIR` reads the directory's `.cfg` files; the stats listener has no servers.
#[test]
fn kubespray_in_a_directory() {
    let r = root("kubespray");
    std::fs::write(r.join("etc/haproxy/conf.d/10-api.cfg"), KUBESPRAY).unwrap();
    std::fs::write(
        r.join("etc/haproxy/conf.d/README"),
        "frontend x\n bind :6443\n",
    )
    .unwrap();
    let (ups, read) = upstreams(
        &Root::at(&r).unwrap(),
        &[PathBuf::from("/etc/haproxy/conf.d")],
        6443,
    )
    .unwrap();
    assert_eq!(ups, [("cp-1.lab".to_owned(), 6443)]);
    assert_eq!(read, [Path::new("/etc/haproxy/conf.d/10-api.cfg")]);
    assert!(
        upstreams(
            &Root::at(&r).unwrap(),
            &[PathBuf::from("/etc/haproxy/conf.d")],
            8081
        )
        .unwrap()
        .0
        .is_empty()
    );
    std::fs::remove_dir_all(&r).unwrap();
}
