//! The fleet's network: the endpoint lab (api1..3 running kube-server, dnsmasq serving the
//! endpoint name with all three, TTL 5 s) plus one namespace and one cgroup per simulated node
//! on the same bridge. Nodes live in 203.0.113.0/24, the servers in 198.51.100.0/24; both
//! subnets share the one bridge, with an on-link route each way, so no router is needed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use anyhow::Result;
use lifeline_tests::infra::api_addrs::API_V4;
use lifeline_tests::{ApiLab, Cgroup, NetNs, api};

use super::contender::Contender;

/// Node addresses are 203.0.113.1 .. 203.0.113.250: the most nodes the fleet can hold.
pub(super) const MAX_NODES: usize = 250;

/// One simulated node: its namespace and the cgroup its kubelet-like client runs in.
pub(super) struct NodeHost {
    pub contender: Contender,
    // Drop order: the cgroup (kills the client) before the namespace.
    pub cgroup: Cgroup,
    pub ns: NetNs,
}

/// The lab and every node. Nodes drop first (their veths go with them), then the lab.
pub(super) struct Fleet {
    pub nodes: Vec<NodeHost>,
    pub lab: ApiLab,
}

/// The address of node `k` (0-based over the whole fleet).
pub(super) fn node_ip(k: usize) -> Ipv4Addr {
    let last = u8::try_from(k + 1).unwrap_or(u8::MAX);
    Ipv4Addr::new(203, 0, 113, last)
}

/// The node index of a client address, if it is one.
pub(super) fn node_index(ip: IpAddr) -> Option<usize> {
    let v4 = match ip {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(v6) => v6.to_ipv4_mapped()?,
    };
    let [a, b, c, d] = v4.octets();
    ((a, b, c) == (203, 0, 113) && d >= 1).then(|| usize::from(d) - 1)
}

/// The three API addresses, as dnsmasq answers them when nothing is wrong.
pub(super) fn all_apis() -> Vec<IpAddr> {
    (1..=3).map(|n| api(n, false)).collect()
}

impl Fleet {
    /// Builds the lab and `per_contender` nodes for each contender, in contender order.
    ///
    /// # Errors
    /// When a namespace, link, route or cgroup cannot be set up.
    pub(super) fn new(per_contender: usize) -> Result<Self> {
        let lab = ApiLab::new(&all_apis())?;
        for host in [&lab.lab.server, &lab.api2, &lab.api3, &lab.dns_host] {
            host.ip(&["route", "add", "203.0.113.0/24", "dev", "eth0"])?;
        }
        let mut fleet = Self {
            nodes: Vec::new(),
            lab,
        };
        for contender in Contender::ALL {
            for _ in 0..per_contender {
                let k = fleet.nodes.len();
                anyhow::ensure!(
                    k < MAX_NODES,
                    "at most {MAX_NODES} nodes fit 203.0.113.0/24"
                );
                let ip = node_ip(k);
                // IPv6 is configured by add_host but unused: the endpoint name has A records only.
                let v6 = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, u16::try_from(k + 1)?);
                let ns = fleet.lab.lab.add_host(&format!("n{k}"), ip, v6)?;
                ns.ip(&["route", "add", "198.51.100.0/24", "dev", "eth0"])?;
                let cgroup = Cgroup::new()?;
                fleet.nodes.push(NodeHost {
                    contender,
                    cgroup,
                    ns,
                });
            }
        }
        Ok(fleet)
    }

    /// api1's address: the one every scenario takes away.
    pub(super) fn api1() -> IpAddr {
        IpAddr::V4(API_V4[0])
    }
}
