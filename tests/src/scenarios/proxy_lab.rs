//! The proxy scenario: the endpoint lab's API servers, a node-local proxy (`proxy.rs`) in the
//! node's namespace in front of api1 and api2, kubelet's stand-in (`kube-client`: Go's
//! keepalive, HTTP/2, a heartbeat every 10 s, client-go's HTTP/2 ping 30 s + 15 s) dialing
//! `127.0.0.1:6443`, and the agent.

use std::net::{SocketAddr, SocketAddrV4};
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};

use crate::fixtures::agent::Agent;
use crate::fixtures::client::Client;
use crate::fixtures::fake_kubelet::FakeKubelet;
use crate::fixtures::proxy::{NodeProxy, PROXY_LISTEN, ProxyKind};
use crate::fixtures::proxy_node::upstreams_by_name;
pub use crate::fixtures::proxy_node::{hosts_args, loopback_hosts, node_agent, upstreams};
use crate::infra::apilab::ApiLab;
use crate::infra::nft::Fault;
use crate::infra::util::{TempDir, wait_until};

/// Fields drop top to bottom: agent and client before the proxy, the proxy before the lab.
pub struct ProxyLab {
    pub agent: Option<Agent>,
    pub kubelet: Option<FakeKubelet>,
    pub client: Option<Client>,
    pub proxy: NodeProxy,
    pub(crate) hosts: TempDir,
    pub api: ApiLab,
}

impl ProxyLab {
    /// The lab and the proxy in the node's namespace, nothing else yet.
    ///
    /// # Errors
    /// When any part cannot be set up.
    pub fn new(kind: ProxyKind) -> Result<Self> {
        Self::build(kind, false)
    }

    /// `new`, the proxy naming its servers `ENDPOINT` and re-resolving it through the lab's
    /// dnsmasq, which answers the upstreams' addresses (haproxy only).
    ///
    /// # Errors
    /// As `new`.
    pub fn resolving(kind: ProxyKind) -> Result<Self> {
        Self::build(kind, true)
    }

    fn build(kind: ProxyKind, resolving: bool) -> Result<Self> {
        let api = ApiLab::new(&[crate::infra::api_addrs::API_V4[0].into()])?;
        let resolving = if resolving {
            Some(upstreams_by_name(&api)?)
        } else {
            None
        };
        let proxy = NodeProxy::start_with(&api.lab.client, kind, &upstreams(), resolving)?;
        let hosts = loopback_hosts()?;
        Ok(Self {
            agent: None,
            kubelet: None,
            client: None,
            proxy,
            hosts,
            api,
        })
    }

    /// Starts the agent as on such a node (`node_agent`; asking the lab's dnsmasq when the
    /// proxy resolves names) and waits until it is ready and names the proxy and its
    /// upstreams (or their name).
    ///
    /// # Errors
    /// When it does not start, is not ready within a minute or did not find the proxy.
    pub fn start_agent(&mut self) -> Result<()> {
        self.start_agent_with(&[])
    }

    /// `start_agent` with `extra` arguments.
    ///
    /// # Errors
    /// As `start_agent`.
    pub fn start_agent_with(&mut self, extra: &[&str]) -> Result<()> {
        let dns = crate::infra::api_addrs::DNS_V4.to_string();
        let mut args = extra.to_vec();
        if self.proxy.resolving.is_some() {
            args.extend(["--dns-server", &dns]);
        }
        let (kubelet, agent) = node_agent(&self.api, &args)?;
        // It found the proxy and its upstreams by itself, from kubelet's kubeconfig.
        let named = format!(
            "kubelet -> {PROXY_LISTEN} ({}, pid {}, ",
            self.proxy.kind.name(),
            self.proxy.proc.pid()
        );
        let line = agent
            .messages("INFO")
            .into_iter()
            .find(|m| m.starts_with(&named));
        let line = line.with_context(|| {
            format!(
                "the agent did not name the proxy ({named} ...): {:#?}",
                agent.messages("INFO")
            )
        })?;
        let named: Vec<String> = match &self.proxy.resolving {
            Some((name, _)) => vec![name.clone()],
            None => upstreams().iter().map(ToString::to_string).collect(),
        };
        for u in named {
            ensure!(line.contains(&u), "upstream {u} not named: {line}");
        }
        self.kubelet = Some(kubelet);
        self.agent = Some(agent);
        Ok(())
    }

    /// Starts kubelet's stand-in, in the lab's cgroup, dialing the proxy.
    ///
    /// # Errors
    /// When it does not connect within 15 s.
    pub fn start_client(&mut self) -> Result<()> {
        let mut args = hosts_args(&self.hosts)?;
        args.extend(["--heartbeat", "10s", "--h2-ping", "30s,15s"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let c = self.api.kube_client(&args)?;
        self.client = Some(c);
        // The client is kubelet's connection from here on: the stand-in restarts without one.
        if self.kubelet.is_some() {
            let kc = crate::fixtures::fake_kubelet::kubeconfig(&format!("https://{PROXY_LISTEN}"));
            self.kubelet = None;
            self.kubelet = Some(FakeKubelet::quiet(
                &self.api.lab.client,
                &self.api.cgroup,
                &kc,
            )?);
        }
        Ok(())
    }

    /// The client.
    ///
    /// # Panics
    /// When it is not started (a test bug).
    #[must_use]
    pub fn client(&self) -> &Client {
        self.client.as_ref().expect("the client is started")
    }

    /// The proxy's one upstream connection, carrying the client's session.
    ///
    /// # Errors
    /// When there is not exactly one within 10 s.
    pub fn upstream_flow(&self) -> Result<(SocketAddrV4, SocketAddrV4)> {
        let flows = wait_until(
            "the proxy's upstream connection",
            Duration::from_secs(10),
            Duration::from_millis(100),
            || {
                let f = self.proxy.upstream_flows(&self.api.lab.client)?;
                Ok((f.len() == 1).then_some(f))
            },
        )?;
        match (flows[0].local, flows[0].peer) {
            (SocketAddr::V4(l), SocketAddr::V4(p)) => Ok((l, p)),
            other => bail!("an IPv6 upstream flow in an IPv4 lab: {other:?}"),
        }
    }

    /// Black-holes the upstream flow only (new connections to the same server still work);
    /// returns the fault, the flow's local end and the test's clock when it was added.
    ///
    /// # Errors
    /// When the flow is not found or nft refuses.
    pub fn blackhole_upstream(&self) -> Result<(Fault, SocketAddrV4, u64)> {
        let (local, peer) = self.upstream_flow()?;
        let fault = self.api.lab.blackhole_flows(*peer.ip(), &[local])?;
        Ok((fault, local, crate::infra::util::mono_ms()))
    }

    /// The client's first answered heartbeat on a connection made after `since` (test's
    /// clock, ms), waiting up to `within`: when it was served again. None: not within.
    ///
    /// # Errors
    /// When the client exited.
    pub fn served_again(&mut self, since: u64, within: Duration) -> Result<Option<u64>> {
        let c = self.client.as_mut().context("no client")?;
        let got = wait_until("served again", within, Duration::from_millis(50), || {
            ensure!(c.proc.try_status().is_none(), "kube-client exited");
            let ev = c.events();
            let redial = ev
                .iter()
                .position(|e| e.event == "redialed" && e.mono_ms >= since);
            Ok(redial.and_then(|i| ev[i..].iter().find(|e| e.event == "ok").map(|e| e.mono_ms)))
        });
        match got {
            Ok(at) => Ok(Some(at)),
            Err(_) if c.proc.try_status().is_none() => Ok(None),
            Err(e) => Err(e),
        }
    }
}
