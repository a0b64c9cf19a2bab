//! The rows through a node-local API proxy (issue 21): the lab's kube-clients dial
//! 127.0.0.1:6443, where a real nginx or haproxy, configured as kubespray does, carries each
//! connection on to api1 or api2 (`lifeline_tests::fixtures::proxy`). The fault is on the hop that
//! breaks on such nodes: every upstream flow of the proxy is dropped, new connections still
//! work. The agent runs at its defaults, as on such a node (`proxy_lab::node_agent`).

use std::net::SocketAddr;

use anyhow::{Result, ensure};
use lifeline_tests::fixtures::proxy::{NodeProxy, PROXY_LISTEN, v4_locals_to};
use lifeline_tests::scenarios::proxy_lab::{hosts_args, loopback_hosts, node_agent, upstreams};
use lifeline_tests::{Agent, ApiLab, FakeKubelet, TempDir, mono_ms};

use crate::cells::Scenario;
use crate::measure::Slot;

/// The proxy of one lab and the hosts file that points the clients at it.
pub(crate) struct Proxy {
    pub proxy: NodeProxy,
    hosts: TempDir,
}

impl Proxy {
    /// The scenario's proxy in the lab's node namespace; None for the other rows.
    pub(crate) fn start(lab: &ApiLab, scenario: Scenario) -> Result<Option<Self>> {
        let Some(kind) = scenario.proxy() else {
            return Ok(None);
        };
        Ok(Some(Self {
            proxy: NodeProxy::start(&lab.lab.client, kind, &upstreams())?,
            hosts: loopback_hosts()?,
        }))
    }

    /// What the clients add to their command line: the name resolves to 127.0.0.1.
    pub(crate) fn client_args(&self) -> Result<Vec<String>> {
        hosts_args(&self.hosts)
    }

    /// The agent at its defaults on a node with such a proxy, and kubelet's stand-in it
    /// discovers the proxy from (`proxy_lab::node_agent`).
    pub(crate) fn agent(lab: &ApiLab) -> Result<(FakeKubelet, Agent)> {
        node_agent(lab, &[])
    }

    /// The peer every client must be on before the fault: the proxy.
    pub(crate) fn client_peer() -> SocketAddr {
        PROXY_LISTEN
    }

    /// Drops every upstream flow of the proxy (one per client, and kubelet's stand-in's),
    /// grouped by server; each slot's fault starts now.
    pub(crate) fn inject(&self, lab: &ApiLab, slots: &mut [Slot]) -> Result<()> {
        let flows = self.proxy.upstream_flows(&lab.lab.client)?;
        // Kubelet's stand-in holds one connection through the proxy, as kubelet does (the
        // agent finds the proxy from it); it re-dials within a second when it ends, so it may
        // be between connections at this moment. Its upstream breaks with the others, as on a
        // node.
        ensure!(
            (slots.len()..=slots.len() + 1).contains(&flows.len()),
            "{} upstream flows for {} clients and kubelet: {flows:?}",
            flows.len(),
            slots.len()
        );
        let now = mono_ms();
        for server in upstreams() {
            let mine = v4_locals_to(&flows, server);
            if let (false, SocketAddr::V4(s)) = (mine.is_empty(), server) {
                let _rules = lab.lab.blackhole_flows(*s.ip(), &mine)?; // stays until the lab goes
            }
        }
        for s in slots.iter_mut() {
            s.fault_ms = now;
        }
        Ok(())
    }
}
