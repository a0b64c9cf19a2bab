//! Issue 34, test f: the proxy hop is followed through a kubelet restart and a proxy reload,
//! without a lifeline restart. On a node whose kubelet dials a local proxy (the real haproxy
//! and nginx, `proxy.rs`), with the agent at its node defaults:
//! 1. the operator moves the proxy to a second port (a reload listening on 127.0.0.1:6444
//!    too) and restarts kubelet with a kubeconfig naming it: within 10 s the agent follows
//!    the new kubelet, the hop names the new port, and kubelet's connection there (made
//!    before the agent could know the port) is watched;
//! 2. the proxy is reloaded with a third upstream: within 10 s it is in the endpoint's set.
//!
//! The same agent process throughout (one `ready` event, the same pid).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::assertions::watched::wait_watched;
use lifeline_tests::fixtures::fake_kubelet::kubeconfig;
use lifeline_tests::fixtures::proxy::{PROXY_LISTEN, ProxyKind};
use lifeline_tests::infra::api_addrs::API_V4;
use lifeline_tests::scenarios::proxy_lab::{ProxyLab, upstreams};
use lifeline_tests::{Agent, FakeKubelet, mono_ms, require_root, wait_until};

/// The proxy's second port, which the restarted kubelet's kubeconfig names.
const ALT: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 6444);
/// What "followed" must take at most.
const WITHIN: Duration = Duration::from_secs(10);

/// Waits (up to three times `WITHIN`, to report a slow follow with its time) until `done`;
/// the time it took from `since`, which must be within `WITHIN`.
fn followed(what: &str, since: u64, done: impl FnMut() -> Result<Option<()>>) -> Result<u64> {
    wait_until(what, WITHIN * 3, Duration::from_millis(100), done)?;
    let took = mono_ms().saturating_sub(since);
    eprintln!("{what}: {took} ms");
    ensure!(
        took <= u64::try_from(WITHIN.as_millis())?,
        "{what} took {took} ms"
    );
    Ok(took)
}

fn run(kind: ProxyKind) -> Result<()> {
    let mut lab = ProxyLab::new(kind)?;
    lab.start_agent()?;
    let agent: Agent = lab.agent.take().context("the agent")?;
    let hop = |listen: SocketAddr| format!("kubelet -> {listen} ({}, pid ", kind.name());
    let source = agent.status()?.endpoint_source.unwrap_or_default();
    ensure!(source.contains(&hop(PROXY_LISTEN)), "{source}");

    // 1. The proxy listens on a second port; kubelet restarts with a kubeconfig naming it.
    lab.proxy
        .reload_listening(&[PROXY_LISTEN, ALT], &upstreams())?;
    let ns = &lab.api.lab.client;
    wait_until(
        "the proxy listening on its second port",
        Duration::from_secs(10),
        Duration::from_millis(50),
        || {
            Ok(ns
                .exec("ss", &["-Hltn", "sport", "=", ":6444"])?
                .contains(&ALT.to_string())
                .then_some(()))
        },
    )?;
    let restart = mono_ms();
    lab.kubelet = None;
    let kubelet = FakeKubelet::start(ns, &lab.api.cgroup, &kubeconfig(&format!("https://{ALT}")))?;
    followed("the restarted kubelet and its proxy port", restart, || {
        let source = agent.status()?.endpoint_source.unwrap_or_default();
        Ok((source.contains(&kubelet.source()) && source.contains(&hop(ALT))).then_some(()))
    })?;
    // Its connection to the new port, made before the agent knew the port, is watched.
    let port = wait_until(
        "kubelet's connection to the proxy's second port",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || {
            Ok(lifeline_tests::established(ns)?
                .into_iter()
                .find(|s| s.peer == ALT)
                .map(|s| s.local.port()))
        },
    )?;
    let s = wait_watched(&agent, port, WITHIN).with_context(|| {
        format!(
            "kubelet's connection to {ALT} is not watched; the agent's log:\n{}",
            agent.proc.stderr_text()
        )
    })?;
    ensure!(s.watched_by.iter().any(|w| w == "cgroup"), "{}", s.raw);

    // 2. The proxy reloaded with a third upstream.
    let api3 = SocketAddr::new(API_V4[2].into(), lifeline_tests::SERVER_PORT);
    let mut list = upstreams();
    list.push(api3);
    let reload = mono_ms();
    lab.proxy.reload_listening(&[PROXY_LISTEN, ALT], &list)?;
    followed("the reloaded proxy's new upstream", reload, || {
        let st = agent.status()?;
        let addrs: Vec<String> = st.endpoints.iter().flat_map(|e| e.addrs.clone()).collect();
        Ok(addrs.contains(&api3.ip().to_string()).then_some(()))
    })?;

    // All of it without a restart of the agent.
    let mut agent = agent;
    ensure!(
        agent.proc.try_status().is_none(),
        "{}",
        agent.proc.stderr_text()
    );
    let readies = agent
        .log()
        .iter()
        .filter(|(_, v)| v.pointer("/fields/event").and_then(|e| e.as_str()) == Some("ready"))
        .count();
    ensure!(readies == 1, "{readies} ready events");
    drop(kubelet);
    Ok(())
}

#[test]
fn haproxy_moved_and_reloaded_is_followed_without_a_restart() -> Result<()> {
    require_root();
    run(ProxyKind::Haproxy)
}

#[test]
fn nginx_moved_and_reloaded_is_followed_without_a_restart() -> Result<()> {
    require_root();
    run(ProxyKind::Nginx)
}
