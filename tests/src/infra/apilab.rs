//! The endpoint lab: the basic lab plus two more API servers and a DNS server on the same
//! bridge. api1 is the basic lab's server host; every API host runs `kube-server` (HTTP/2)
//! on port 6443, and dnsmasq serves `api.lab.test` for them.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::fixtures::agent::AgentArgs;
use crate::fixtures::client::Client;
use crate::infra::api_addrs::{API_NAME, API_V4, API_V6, DNS_V4, DNS_V6, ENDPOINT};
use crate::infra::cgroup::Cgroup;
use crate::infra::dns::Dnsmasq;
use crate::infra::lab::Lab;
use crate::infra::netns::NetNs;
use crate::infra::paths::fixture;
use crate::infra::proc::Proc;

/// Everything a scenario needs. Fields drop top to bottom: the servers and dnsmasq, the
/// cgroup, then the hosts and the basic lab (each namespace kills what still runs in it).
pub struct ApiLab {
    pub servers: Vec<Proc>,
    pub dns: Dnsmasq,
    pub cgroup: Cgroup,
    pub api2: NetNs,
    pub api3: NetNs,
    pub dns_host: NetNs,
    pub lab: Lab,
}

impl ApiLab {
    /// Builds the hosts, starts `kube-server` on api1..api3 and dnsmasq answering `initial`.
    ///
    /// # Errors
    /// When any part cannot be set up.
    pub fn new(initial: &[IpAddr]) -> Result<Self> {
        let lab = Lab::new()?;
        let api2 = lab.add_host("a2", API_V4[1], API_V6[1])?;
        let api3 = lab.add_host("a3", API_V4[2], API_V6[2])?;
        let dns_host = lab.add_host("dns", DNS_V4, DNS_V6)?;
        let cgroup = Cgroup::new()?;
        let dns = Dnsmasq::new(&dns_host, initial)?;
        let mut servers = Vec::new();
        for host in [&lab.server, &api2, &api3] {
            servers.push(start_kube_server(host)?);
        }
        Ok(Self {
            servers,
            dns,
            cgroup,
            api2,
            api3,
            dns_host,
            lab,
        })
    }

    /// The namespace of API host `n` (1, 2 or 3).
    ///
    /// # Panics
    /// When `n` is not 1, 2 or 3.
    #[must_use]
    pub fn api_host(&self, n: usize) -> &NetNs {
        [&self.lab.server, &self.api2, &self.api3][n - 1]
    }

    /// A `kube-client` in the watched cgroup resolving `API_NAME` through the lab's dnsmasq
    /// over IPv4 (`extra`: e.g. `--watch-only`), once it is connected.
    ///
    /// # Errors
    /// When it cannot start or connect within 15 s.
    pub fn kube_client(&self, extra: &[&str]) -> Result<Client> {
        self.kube_client_via(DNS_V4.into(), extra)
    }

    /// `kube_client`, asking dnsmasq at `dns` (`DNS_V4` or `DNS_V6`).
    ///
    /// # Errors
    /// When it cannot start or connect within 15 s.
    pub fn kube_client_via(&self, dns: IpAddr, extra: &[&str]) -> Result<Client> {
        let args = Self::kube_client_args(dns, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Client::start_bin("kube-client", &self.lab, Some(&self.cgroup), &args)
    }

    /// `kube-client`'s arguments in this lab: `API_NAME` through dnsmasq at `dns`, then
    /// `extra` (also what a `kubelet.service` unit runs, see `kubelet_unit`).
    #[must_use]
    pub fn kube_client_args(dns: IpAddr, extra: &[&str]) -> Vec<String> {
        let mut args = vec!["--server".to_owned(), API_NAME.to_owned()];
        args.extend(["--dns-server".to_owned(), dns.to_string()]);
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    }

    /// The agent's arguments for this lab: the endpoint and the lab's DNS server (IPv4),
    /// then `extra`. `stall` is `--stall-timeout` (None: the agent's default, 10 s).
    #[must_use]
    pub fn agent_args(stall: Option<&str>, extra: &[&str]) -> AgentArgs {
        Self::agent_args_via(DNS_V4.into(), stall, extra)
    }

    /// `agent_args`, with `--dns-server dns`.
    #[must_use]
    pub fn agent_args_via(dns: IpAddr, stall: Option<&str>, extra: &[&str]) -> AgentArgs {
        let dns = dns.to_string();
        let mut all = vec!["--endpoint", ENDPOINT, "--dns-server", &dns];
        all.extend_from_slice(extra);
        AgentArgs {
            stall_timeout: stall.map(str::to_owned),
            extra: all.iter().map(|a| (*a).to_owned()).collect(),
            ..AgentArgs::default()
        }
    }
}

/// Starts `kube-server` in `host` and waits until it listens.
fn start_kube_server(host: &NetNs) -> Result<Proc> {
    let bin = fixture("kube-server")?;
    let cmd = host.command(bin.to_str().context("path")?, &[]);
    let mut p = Proc::spawn("kube-server", cmd)?;
    p.wait_stdout("kube-server to listen", Duration::from_secs(10), |l| {
        l.contains("\"listening\"")
    })?;
    Ok(p)
}
