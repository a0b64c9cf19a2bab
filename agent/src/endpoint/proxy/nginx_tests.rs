use std::path::Path;

use super::*;
use crate::endpoint::proxy::files::Root;

/// kubespray's roles/kubernetes/node/templates/loadbalancer/nginx.conf.j2, rendered for two
/// control-plane nodes (one by name), with its http health check server.
const KUBESPRAY: &str = r"error_log stderr notice;

worker_processes 2;
worker_rlimit_nofile 130048;
worker_shutdown_timeout 10s;

events {
  multi_accept on;
  use epoll;
  worker_connections 16384;
}

stream {
  upstream kube_apiserver {
    least_conn;
    server 198.51.100.2:6443;
    server cp-2.lab:6443 max_fails=1; # by name
    }

  server {
    listen        127.0.0.1:6443;
    proxy_pass    kube_apiserver;
    proxy_timeout 10m;
    proxy_connect_timeout 1s;
  }
}

http {
  aio threads;
  server {
    listen 8081;
    location /healthz {
      access_log off;
      return 200;
    }
    location /stub_status {
      stub_status on;
      access_log off;
    }
  }
}
";

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lifeline-nginx-{name}-{}", std::process::id()));
    std::fs::create_dir_all(d.join("etc/nginx/conf.d")).unwrap();
    d
}

#[test]
fn kubespray_stream_upstreams() {
    let root = dir("kubespray");
    std::fs::write(root.join("etc/nginx/nginx.conf"), KUBESPRAY).unwrap();
    let (ups, read) = upstreams(
        &Root::at(&root).unwrap(),
        Path::new("/etc/nginx/nginx.conf"),
        6443,
    )
    .unwrap();
    assert_eq!(
        ups,
        [
            ("198.51.100.2".to_owned(), 6443),
            ("cp-2.lab".to_owned(), 6443)
        ]
    );
    assert_eq!(read, [Path::new("/etc/nginx/nginx.conf")]);
    let (none, _) = upstreams(
        &Root::at(&root).unwrap(),
        Path::new("/etc/nginx/nginx.conf"),
        7445,
    )
    .unwrap();
    assert!(
        none.is_empty(),
        "no stream server listens on 7445: {none:?}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

/// Debian's layout: the stream block in an included file, found by a relative glob, and a
/// `proxy_pass` straight to one address.
#[test]
fn included_files_and_a_direct_pass() {
    let root = dir("include");
    std::fs::write(
        root.join("etc/nginx/nginx.conf"),
        "user www-data;\nevents { worker_connections 768; }\ninclude conf.d/*.conf;\n",
    )
    .unwrap();
    std::fs::write(
        root.join("etc/nginx/conf.d/api.conf"),
        "stream { server { listen [::1]:7445; proxy_pass '[2001:db8::5]:6443'; } }\n",
    )
    .unwrap();
    std::fs::write(root.join("etc/nginx/conf.d/other.txt"), "stream {").unwrap();
    let (ups, read) = upstreams(
        &Root::at(&root).unwrap(),
        Path::new("/etc/nginx/nginx.conf"),
        7445,
    )
    .unwrap();
    assert_eq!(ups, [("2001:db8::5".to_owned(), 6443)]);
    assert_eq!(read.len(), 2, "{read:?}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn an_include_loop_is_bounded() {
    let root = dir("loop");
    std::fs::write(root.join("etc/nginx/nginx.conf"), "include nginx.conf;\n").unwrap();
    let e = upstreams(
        &Root::at(&root).unwrap(),
        Path::new("/etc/nginx/nginx.conf"),
        6443,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("includes nested more than 8 deep"),
        "{e}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
