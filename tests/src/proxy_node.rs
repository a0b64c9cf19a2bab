//! What runs on a node with a local API proxy besides the proxy (`proxy.rs`): the proxy's
//! upstream list, kubelet's view of the API (a name that resolves to 127.0.0.1, a kubeconfig
//! saying `https://127.0.0.1:6443`) and the agent at its defaults. The tests' `ProxyLab` and
//! the bench's proxy rows build the same node from these.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::agent::{Agent, AgentArgs};
use crate::api_addrs::{API_NAME, API_V4};
use crate::apilab::ApiLab;
use crate::fake_kubelet::FakeKubelet;
use crate::proxy::PROXY_LISTEN;
use crate::util::TempDir;

/// The proxy's upstreams: api1 and api2 (api3 is left for a test that adds one).
#[must_use]
pub fn upstreams() -> Vec<SocketAddr> {
    API_V4[..2]
        .iter()
        .map(|a| SocketAddr::new(IpAddr::V4(*a), crate::lab::SERVER_PORT))
        .collect()
}

/// The upstreams by a name instead (`NodeProxy::resolving`): the lab's dnsmasq answers
/// `upstreams()`' addresses for `ENDPOINT`'s name from now on.
///
/// # Errors
/// When dnsmasq does not answer them.
pub fn upstreams_by_name(api: &ApiLab) -> Result<(String, SocketAddr)> {
    let addrs: Vec<IpAddr> = upstreams().iter().map(SocketAddr::ip).collect();
    api.dns.set(&addrs)?;
    let dns = SocketAddr::new(crate::api_addrs::DNS_V4.into(), 53);
    Ok((crate::api_addrs::ENDPOINT.to_owned(), dns))
}

/// A hosts file naming `API_NAME` 127.0.0.1: kubelet's kubeconfig on such a node says
/// `https://127.0.0.1:6443`, and `kube-client` dials a name, looked up here first.
///
/// # Errors
/// When the file cannot be written.
pub fn loopback_hosts() -> Result<TempDir> {
    let dir = TempDir::new()?;
    std::fs::write(dir.path().join("hosts"), format!("127.0.0.1 {API_NAME}\n"))?;
    Ok(dir)
}

/// `kube-client`'s arguments that make it use `loopback_hosts`' file.
///
/// # Errors
/// When the path is not UTF-8.
pub fn hosts_args(dir: &TempDir) -> Result<Vec<String>> {
    let file = dir.path().join("hosts");
    let file = file.to_str().context("utf-8 path")?;
    Ok(vec!["--hosts-file".into(), file.into()])
}

/// The agent at its defaults on a node whose kubelet dials the proxy, once ready: kubelet
/// (the lab's stand-in, in the lab's cgroup) runs with a kubeconfig saying
/// `https://127.0.0.1:6443`, and the agent is given only what the lab cannot be by default:
/// kubelet's cgroup (`system.slice/kubelet.service` on a node) and, as the default targets
/// add, the endpoint's clients. Everything else (the proxy, its upstreams) it finds itself.
/// `extra`: a test's tuning (e.g. a short orphan grace).
///
/// # Errors
/// When kubelet's stand-in or the agent does not start, or the agent is not ready within a
/// minute.
pub fn node_agent(api: &ApiLab, extra: &[&str]) -> Result<(FakeKubelet, Agent)> {
    let kubeconfig = crate::fake_kubelet::kubeconfig(&format!("https://{PROXY_LISTEN}"));
    let kubelet = FakeKubelet::start(&api.lab.client, &api.cgroup, &kubeconfig)?;
    let args = AgentArgs {
        stall_timeout: None,
        extra: ["--endpoint-clients"]
            .iter()
            .chain(extra)
            .map(|a| (*a).to_owned())
            .collect(),
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_targets(&api.lab, &[api.cgroup.path()], &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    Ok((kubelet, agent))
}
