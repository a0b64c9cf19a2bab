//! The proxy scenario in kubespray's order (issue 37): the agent runs first, with kubelet's
//! kubeconfig naming `127.0.0.1:6443` where nothing listens yet, and the proxy comes later,
//! as kubelet starts the nginx-proxy static pod. kubelet (the lab's stand-in) and the
//! test's client dial the proxy as soon as it listens, before the agent has found it, so
//! the agent adopts their upstream connections when it does.

use std::net::{SocketAddr, SocketAddrV4};
use std::time::Duration;

use anyhow::{Result, ensure};

use crate::fixtures::proxy::{NodeProxy, ProxyKind, v4_locals_to};
use crate::fixtures::proxy_node::{hosts_args, loopback_hosts, node_agent, upstreams};
use crate::infra::apilab::ApiLab;
use crate::infra::nft::Fault;
use crate::infra::util::{mono_ms, wait_until};
use crate::scenarios::proxy_lab::ProxyLab;

impl ProxyLab {
    /// The lab and the agent (`node_agent`, ready), then `delay` later the proxy, listening.
    /// Unlike `start_agent`, nothing waits for the agent to find the proxy.
    ///
    /// # Errors
    /// When any part cannot be set up.
    pub fn agent_first(kind: ProxyKind, delay: Duration) -> Result<Self> {
        let api = ApiLab::new(&[crate::infra::api_addrs::API_V4[0].into()])?;
        let hosts = loopback_hosts()?;
        let (kubelet, agent) = node_agent(&api, &[])?;
        std::thread::sleep(delay);
        let proxy = NodeProxy::start(&api.lab.client, kind, &upstreams())?;
        Ok(Self {
            agent: Some(agent),
            kubelet: Some(kubelet),
            client: None,
            proxy,
            hosts,
            api,
        })
    }

    /// `start_client`, but kubelet's stand-in keeps its own connection through the proxy, as
    /// kubelet does (`start_client` restarts it, and a restarted kubelet makes the agent
    /// look for the proxy at once: not what a node does).
    ///
    /// # Errors
    /// When it does not connect within 15 s.
    pub fn start_client_beside_kubelet(&mut self) -> Result<()> {
        let mut args = hosts_args(&self.hosts)?;
        args.extend(["--heartbeat", "10s", "--h2-ping", "30s,15s"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.client = Some(self.api.kube_client(&args)?);
        Ok(())
    }

    /// Black-holes every upstream flow of the proxy now (kubelet's and the client's: both
    /// once they exist, within 10 s), server by server; new connections still work. Returns
    /// the faults, the flows' local ends and the test's clock when they were added.
    ///
    /// # Errors
    /// When the flows are not there or nft refuses.
    pub fn blackhole_upstreams(&self) -> Result<(Vec<Fault>, Vec<SocketAddrV4>, u64)> {
        let flows = wait_until(
            "kubelet's and the client's upstream connections",
            Duration::from_secs(10),
            Duration::from_millis(100),
            || {
                let f = self.proxy.upstream_flows(&self.api.lab.client)?;
                Ok((f.len() == 2).then_some(f))
            },
        )?;
        let mut faults = Vec::new();
        let mut all = Vec::new();
        for server in upstreams() {
            let SocketAddr::V4(s) = server else { continue };
            let mine = v4_locals_to(&flows, server);
            if !mine.is_empty() {
                faults.push(self.api.lab.blackhole_flows(*s.ip(), &mine)?);
                all.extend(mine);
            }
        }
        ensure!(all.len() == 2, "IPv4 upstream flows: {flows:?}");
        Ok((faults, all, mono_ms()))
    }
}
