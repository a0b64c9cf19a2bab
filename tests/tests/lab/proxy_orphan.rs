//! (b) An API server removed from the node-local proxy's list (the operator edits the
//! configuration and reloads it, issue 21). The agent reads the proxy's upstreams again, the
//! removed server's idle upstream connection is orphaned and migrated at a quiet moment (a
//! short grace and spread set here), the proxy then closes the client's connection, and the
//! client is served again through a server still in the list.
//!
//! The same when the list names the servers by a DNS name and the name's answer drops the
//! address in use: haproxy re-resolves (`resolvers`) and dials the rest; the agent resolves
//! the name in the list as it does the endpoint's, every 5 s, and migrates the idle
//! connection to the dropped address.
//!
//! haproxy's reload (master-worker, SIGUSR2) leaves the old worker serving its connections
//! for as long as they last: only the agent moves them. nginx's reload (SIGHUP) with
//! kubespray's `worker_shutdown_timeout 10s` ends the old worker's connections itself after
//! 10 s, so there the test asserts the outcome (the client on a current server, without
//! anything else killed) and reports which of the two moved it.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::assertions::decision::Decision;
use lifeline_tests::fixtures::proxy::ProxyKind;
use lifeline_tests::infra::api_addrs::API_V4;
use lifeline_tests::scenarios::proxy_lab::{ProxyLab, upstreams};
use lifeline_tests::{mono_ms, require_root, wait_until};

const GRACE_MS: u64 = 3_000;
const FAST_ORPHANS: [&str; 4] = ["--orphan-grace", "3s", "--migrate-spread", "1s"];

/// Reloads the proxy without the server the client's upstream is on (api3 takes its place);
/// returns the old upstream flow's local port, the server removed and when.
fn remove_the_used_server(lab: &mut ProxyLab) -> Result<(u16, SocketAddr, u64)> {
    lab.client()
        .wait_event("a first heartbeat", Duration::from_secs(15), |e| {
            e.event == "ok"
        })?;
    let (local, peer) = lab.upstream_flow()?;
    let peer = SocketAddr::V4(peer);
    let api3 = SocketAddr::new(API_V4[2].into(), lifeline_tests::SERVER_PORT);
    let mut list: Vec<SocketAddr> = upstreams().into_iter().filter(|u| *u != peer).collect();
    list.push(api3);
    let at = mono_ms();
    lab.proxy.reload(&list)?;
    Ok((local.port(), peer, at))
}

/// The client served again on a connection made after `since`, and the proxy's upstream
/// for it on a server still in the list.
fn back_on_a_current_server(lab: &mut ProxyLab, removed: SocketAddr, since: u64) -> Result<u64> {
    let served = lab
        .served_again(since, Duration::from_secs(30))?
        .context("the client was not served again within 30 s")?;
    let (_, peer) = lab.upstream_flow()?;
    let peer = SocketAddr::V4(peer);
    ensure!(
        peer != removed && lab.proxy.upstreams.contains(&peer),
        "the client's upstream is {peer}, not one of {:?}",
        lab.proxy.upstreams
    );
    Ok(served)
}

/// The orphan migration of the upstream connection from local `port`, not before the grace
/// after `change`; returns it and how long after `change` it came.
fn migrated(lab: &ProxyLab, port: u16, change: u64) -> Result<(Decision, u64)> {
    let agent = lab.agent.as_ref().context("agent")?;
    let kill = wait_until(
        "the migration of the removed server's upstream connection",
        Duration::from_secs(40),
        Duration::from_millis(200),
        || Ok(agent.kills_of(port).into_iter().next()),
    )
    .with_context(|| agent.proc.stderr_text())?;
    let after = kill.at_ms - change;
    ensure!(
        kill.verdict == "orphaned" && kill.outcome == "killed",
        "not an orphan migration: {}",
        kill.raw
    );
    ensure!(
        after >= GRACE_MS,
        "killed {after} ms after the change, before the grace"
    );
    Ok((kill, after))
}

/// Nothing decided but the one migration.
fn only_one_decision(lab: &ProxyLab) -> Result<()> {
    let agent = lab.agent.as_ref().context("agent")?;
    ensure!(
        agent.decisions().len() == 1,
        "more than the one migration: {:?}",
        agent.decisions()
    );
    Ok(())
}

#[test]
fn haproxy_upstream_removed_on_reload_is_migrated_at_a_quiet_moment() -> Result<()> {
    require_root();
    let mut lab = ProxyLab::new(ProxyKind::Haproxy)?;
    lab.start_agent_with(&FAST_ORPHANS)?;
    lab.start_client()?;
    let (port, removed, change) = remove_the_used_server(&mut lab)?;
    let (kill, after) = migrated(&lab, port, change)?;
    let served = back_on_a_current_server(&mut lab, removed, change)?;
    eprintln!(
        "haproxy: {removed} removed by a reload; its upstream connection migrated {after} ms later ({}), the client served again {} ms after the reload",
        kill.raw,
        served - change
    );
    only_one_decision(&lab)
}

#[test]
fn haproxy_upstream_dropped_from_dns_is_migrated_at_a_quiet_moment() -> Result<()> {
    require_root();
    let mut lab = ProxyLab::resolving(ProxyKind::Haproxy)?;
    lab.start_agent_with(&FAST_ORPHANS)?;
    lab.start_client()?;
    lab.client()
        .wait_event("a first heartbeat", Duration::from_secs(15), |e| {
            e.event == "ok"
        })?;
    let (local, peer) = lab.upstream_flow()?;
    let removed = SocketAddr::V4(peer);
    let left: Vec<SocketAddr> = upstreams().into_iter().filter(|u| *u != removed).collect();
    let change = mono_ms();
    let addrs: Vec<_> = left.iter().map(SocketAddr::ip).collect();
    lab.api.dns.set(&addrs)?;
    lab.proxy.upstreams.clone_from(&left);
    let (kill, after) = migrated(&lab, local.port(), change)?;
    let served = back_on_a_current_server(&mut lab, removed, change)?;
    // The set changed because the name's answer did: the agent logged the new addresses,
    // while the proxy's list it re-reads (the name) stayed the same.
    let agent = lab.agent.as_ref().context("agent")?;
    let infos = agent.messages("INFO");
    let now = format!(
        "the proxy's upstreams on port 6443 are now [{}]",
        left[0].ip()
    );
    ensure!(
        infos.contains(&now) && !infos.iter().any(|m| m.contains("(was kubelet ->")),
        "no '{now}' without a change of the proxy's list: {infos:#?}"
    );
    eprintln!(
        "haproxy: {removed} dropped from {}'s answer; its upstream connection migrated {after} ms later ({}), the client served again {} ms after the change",
        lifeline_tests::infra::api_addrs::API_NAME,
        kill.raw,
        served - change
    );
    only_one_decision(&lab)
}

#[test]
fn nginx_upstream_removed_on_reload_ends_on_a_current_server() -> Result<()> {
    require_root();
    let mut lab = ProxyLab::new(ProxyKind::Nginx)?;
    lab.start_agent_with(&FAST_ORPHANS)?;
    lab.start_client()?;
    let (port, removed, change) = remove_the_used_server(&mut lab)?;
    let served = back_on_a_current_server(&mut lab, removed, change)?;
    let agent = lab.agent.as_ref().context("agent")?;
    let kills = agent.kills_of(port);
    ensure!(
        kills.iter().all(|k| k.verdict == "orphaned"),
        "a kill other than the orphan's migration: {kills:?}"
    );
    ensure!(
        agent.decisions().iter().all(|d| d.is_for_port(port)),
        "a decision about another socket: {:?}",
        agent.decisions()
    );
    eprintln!(
        "nginx: {removed} removed by a reload; the old connection ended by {}; the client served again {} ms after the reload",
        kills.first().map_or_else(
            || "nginx's worker_shutdown_timeout".to_owned(),
            |k| format!(
                "lifeline's migration {} ms after the reload",
                k.at_ms - change
            )
        ),
        served - change
    );
    Ok(())
}
