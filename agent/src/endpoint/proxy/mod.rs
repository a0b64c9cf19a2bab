//! The node-local proxy between kubelet and the API servers (kubespray's nginx or haproxy,
//! the k3s/RKE2 agent's load balancer, Talos' KubePrism): when kubelet's kubeconfig names a
//! loopback address, the connection that can black-hole is the proxy's upstream one, so the
//! endpoint lifeline follows is the proxy's upstream list, and kubelet's loopback socket is
//! no member of it.

pub(crate) mod blocking;
mod component;
mod config;
mod files;
mod find;
pub(crate) mod follow;
mod haproxy;
mod identity;
mod k3s;
mod listener;
mod nginx;
mod open;
mod served;

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod peak;

use std::{
    fmt,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::PathBuf,
};

pub(crate) use component::Component;
pub(crate) use find::find;
pub(crate) use identity::{Reread, reread};

/// Where the upstream list came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Learned {
    /// The proxy's configuration (the files read, as the proxy names them).
    Config(Vec<PathBuf>),
    /// Its established connections on the API ports (an unknown proxy, or a configuration
    /// that named none).
    Connections,
}

/// The hop kubelet's endpoint leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Proxy {
    /// kubelet's endpoint (loopback).
    pub listen: SocketAddr,
    /// `nginx`, `haproxy`, `k3s`, `rke2`, or the listener's `comm`.
    pub name: String,
    /// Its main process, and that process's start time (`/proc/PID/stat` field 22): the
    /// pid alone may be anyone's after the proxy restarts.
    pub pid: u32,
    pub start: u64,
    /// The cgroup of the server's end of kubelet's connection (its listener's): id, path
    /// from the hierarchy's root, directory here.
    pub cgroup_id: crate::kernel::diag::CgroupId,
    pub cgroup: String,
    pub dir: PathBuf,
    /// What makes it a node component (`component.rs`).
    pub component: Component,
    pub upstreams: Vec<(String, u16)>,
    pub learned: Learned,
}

impl fmt::Display for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ups: Vec<String> = self
            .upstreams
            .iter()
            .map(|(h, p)| super::set::name(h, *p))
            .collect();
        write!(
            f,
            "kubelet -> {} ({}, pid {}, {}) -> [{}]",
            self.listen,
            self.name,
            self.pid,
            self.component,
            ups.join(", ")
        )?;
        match &self.learned {
            Learned::Config(files) => {
                let files: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
                write!(f, " from {}", files.join(", "))
            }
            Learned::Connections => f.write_str(" learned from its connections"),
        }
    }
}

/// The loopback address kubelet's kubeconfig names, if it names one (`localhost` is
/// 127.0.0.1, as the hosts file every distribution ships says).
#[must_use]
pub(crate) fn loopback(host: &str, port: u16) -> Option<SocketAddr> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = if h.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        h.parse().ok()?
    };
    ip.is_loopback().then_some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_endpoints_only() {
        assert_eq!(
            loopback("127.0.0.1", 6443),
            Some("127.0.0.1:6443".parse().unwrap())
        );
        assert_eq!(
            loopback("localhost", 6444),
            Some("127.0.0.1:6444".parse().unwrap())
        );
        assert_eq!(loopback("[::1]", 7445), Some("[::1]:7445".parse().unwrap()));
        assert_eq!(loopback("127.0.0.53", 6443).map(|a| a.port()), Some(6443));
        assert_eq!(loopback("198.51.100.2", 6443), None);
        assert_eq!(loopback("api.lab", 6443), None);
    }

    #[test]
    fn the_hop_as_status_shows_it() {
        let p = Proxy {
            listen: "127.0.0.1:6443".parse().unwrap(),
            name: "nginx".into(),
            pid: 812,
            start: 1,
            cgroup_id: crate::kernel::diag::CgroupId(9),
            cgroup: "/system.slice/nginx.service".into(),
            dir: "/sys/fs/cgroup/system.slice/nginx.service".into(),
            component: Component::Unit("nginx.service".into()),
            upstreams: vec![("198.51.100.2".into(), 6443), ("2001:db8::4".into(), 6443)],
            learned: Learned::Config(vec!["/etc/nginx/nginx.conf".into()]),
        };
        assert_eq!(
            p.to_string(),
            "kubelet -> 127.0.0.1:6443 (nginx, pid 812, systemd unit nginx.service) -> [198.51.100.2:6443, [2001:db8::4]:6443] from /etc/nginx/nginx.conf"
        );
    }
}
