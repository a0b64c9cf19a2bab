//! (a) kubelet behind a node-local proxy (issue 21): kube-client -> 127.0.0.1:6443 -> nginx or
//! haproxy -> api1/api2, and the proxy's upstream flow black-holed (new connections still
//! work). Without the agent the client waits for its own HTTP/2 ping (30 s idle + 15 s);
//! with it, the proxy's upstream socket is killed within the stall/silent time, the proxy
//! fails over and the client is served again well before its ping would have given up.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::fixtures::proxy::ProxyKind;
use lifeline_tests::scenarios::proxy_lab::ProxyLab;
use lifeline_tests::{require_root, wait_until};

/// The longest a run waits for the client without the agent: past its ping's 45 s.
const WITHOUT_BOUND: Duration = Duration::from_mins(1);
/// client-go's HTTP/2 ping cannot fire before 30 s of silence: nothing else ends the outage.
const PING_FLOOR_MS: u64 = 30_000;
/// A 10 s heartbeat, the 10 s stall timeout, and 10 s for a slow machine.
const KILL_BOUND_MS: u64 = 30_000;

fn without_agent(kind: ProxyKind) -> Result<()> {
    let mut lab = ProxyLab::new(kind)?;
    lab.start_client()?;
    let (_fault, local, t0) = lab.blackhole_upstream()?;
    let served = lab.served_again(t0, WITHOUT_BOUND)?;
    let outage = served.map(|s| s - t0);
    eprintln!(
        "proxy {}: without lifeline, upstream flow {local} black-holed: client served again after {}",
        kind.name(),
        outage.map_or_else(
            || format!("more than {WITHOUT_BOUND:?}"),
            |o| format!("{o} ms")
        )
    );
    if let Some(o) = outage {
        ensure!(
            o >= PING_FLOOR_MS,
            "served again after {o} ms without the agent: something else healed the flow\n{}",
            lab.client().dump()
        );
    }
    Ok(())
}

fn with_agent(kind: ProxyKind) -> Result<()> {
    let mut lab = ProxyLab::new(kind)?;
    lab.start_agent()?;
    lab.start_client()?;
    let (_fault, local, t0) = lab.blackhole_upstream()?;
    let agent = lab.agent.as_ref().context("agent")?;
    let d = wait_until(
        "the kill of the proxy's upstream socket",
        Duration::from_secs(40),
        Duration::from_millis(100),
        || {
            Ok(agent
                .decisions()
                .into_iter()
                .find(|d| d.action == "kill" && d.is_for_port(local.port())))
        },
    )?;
    ensure!(d.outcome == "killed", "not killed: {}", d.raw);
    let killed_at = d.logged_ms.unwrap_or(d.at_ms);
    // The next heartbeat is unacknowledged within 10 s of the fault, stalled 10 s later (the
    // default --stall-timeout); 10 s more for a slow machine.
    ensure!(
        killed_at.saturating_sub(t0) <= KILL_BOUND_MS,
        "killed {} ms after the black hole: later than heartbeat + stall time",
        killed_at.saturating_sub(t0)
    );
    let served = lab
        .served_again(t0, Duration::from_secs(30))?
        .context("the client was not served again within 30 s of the kill")?;
    // What the proxy did with the client's own connection when its upstream died: the
    // client's first error or end of stream after the black hole.
    let ev = lab.client().events();
    let closed = ev
        .iter()
        .find(|e| (e.event == "eof" || e.event == "error") && e.mono_ms >= t0);
    eprintln!(
        "proxy {}: with lifeline, upstream {local} killed ({} verdict) {} ms after the black hole; downstream: {}; client served again after {} ms",
        kind.name(),
        d.verdict,
        killed_at.saturating_sub(t0),
        closed.map_or_else(
            || "kept open".to_owned(),
            |e| format!(
                "{} {} ms after the kill ({})",
                e.event,
                e.mono_ms.saturating_sub(killed_at),
                e.raw
            )
        ),
        served - t0
    );
    let own = lab.client().local_port().context("the client's port")?;
    ensure!(
        agent_decisions_spare(&lab, own),
        "kubelet's own loopback socket was judged: {:?}",
        lab.agent.as_ref().map(lifeline_tests::Agent::decisions)
    );
    ensure!(
        served - t0 < 40_000,
        "served again only after {} ms: no better than the client's own ping",
        served - t0
    );
    Ok(())
}

/// No decision about the client's own (loopback) socket from local port `port`.
fn agent_decisions_spare(lab: &ProxyLab, port: u16) -> bool {
    lab.agent
        .as_ref()
        .is_some_and(|a| a.decisions().iter().all(|d| !d.is_for_port(port)))
}

#[test]
fn nginx_upstream_blackhole_without_lifeline_waits_for_the_clients_ping() -> Result<()> {
    require_root();
    without_agent(ProxyKind::Nginx)
}

#[test]
fn nginx_upstream_blackhole_is_healed_by_lifeline() -> Result<()> {
    require_root();
    with_agent(ProxyKind::Nginx)
}

#[test]
fn haproxy_upstream_blackhole_without_lifeline_waits_for_the_clients_ping() -> Result<()> {
    require_root();
    without_agent(ProxyKind::Haproxy)
}

#[test]
fn haproxy_upstream_blackhole_is_healed_by_lifeline() -> Result<()> {
    require_root();
    with_agent(ProxyKind::Haproxy)
}
