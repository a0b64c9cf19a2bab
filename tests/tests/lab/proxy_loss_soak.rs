//! (c) No false decisions behind a node-local proxy (issue 21): 5 minutes of a kubelet-like
//! client's healthy traffic (a heartbeat every 10 s, a watch event every 5 s) through nginx
//! and through haproxy, each in its own lab, with 5 % random loss each way on the upstream
//! path (every forwarded packet; the client's loopback hop is not forwarded). The proxy's
//! upstream socket is watched and held at the agent's keepalive, so its probes meet the loss
//! all the time; nothing may be decided, the client may see no error, the upstream
//! connection must be the same one at the end, and the loss must have been real.

use std::time::Duration;

use anyhow::{Result, ensure};
use lifeline_tests::fixtures::proxy::ProxyKind;
use lifeline_tests::scenarios::idle_lab::wait_armed;
use lifeline_tests::scenarios::proxy_lab::ProxyLab;
use lifeline_tests::{assertions::watched::wait_watched, mono_ms, require_root};

const LOSS_PERCENT: u8 = 5;
const WINDOW: Duration = Duration::from_mins(5);

fn soak(kind: ProxyKind) -> Result<()> {
    let mut lab = ProxyLab::new(kind)?;
    lab.start_agent()?;
    lab.start_client()?;
    let (local, peer) = lab.upstream_flow()?;
    let agent = lab.agent.as_ref().expect("started");
    let sock = wait_watched(agent, local.port(), Duration::from_secs(10))?;
    ensure!(
        sock.watched_by.iter().any(|w| w == "endpoint"),
        "the proxy's upstream socket is not watched as the endpoint's: {}",
        sock.raw
    );
    wait_armed(agent, local.port(), "1s,1s,20")?;
    let loss = lab.api.lab.loss(LOSS_PERCENT)?;
    let start = mono_ms();
    std::thread::sleep(WINDOW);
    let (seen, dropped) = lab.api.lab.counters(&loss)?;
    lab.api.lab.heal(&loss)?;
    let c = lab.client();
    let oks = c
        .events()
        .iter()
        .filter(|e| e.event == "ok" && e.mono_ms >= start)
        .count();
    eprintln!(
        "proxy {}: {} s at {LOSS_PERCENT} % loss on the upstream path: {dropped} of {seen} packets dropped, {oks} heartbeats answered, decisions: {}",
        kind.name(),
        (mono_ms() - start) / 1000,
        agent.decisions().len()
    );
    ensure!(
        agent.decisions().is_empty(),
        "a live upstream connection was judged: {:?}",
        agent.decisions()
    );
    ensure!(
        c.errors().is_empty(),
        "the client saw an error: {}",
        c.dump()
    );
    let now = lab.proxy.upstream_flows(&lab.api.lab.client)?;
    ensure!(
        now.iter()
            .any(|s| s.local == local.into() && s.peer == peer.into()),
        "the upstream connection {local} -> {peer} is gone: {now:?}"
    );
    // 30 heartbeats, 60 watch events and the keepalive probes of the quiet seconds: hundreds
    // of packets crossed, and at 5 % some were dropped.
    ensure!(oks >= 25, "only {oks} heartbeats answered in {WINDOW:?}");
    ensure!(
        dropped >= 5 && dropped * 100 <= seen * 10,
        "loss not as configured: {dropped} of {seen} dropped"
    );
    Ok(())
}

#[test]
fn nginx_upstream_at_five_percent_loss_for_five_minutes_nothing_killed() -> Result<()> {
    require_root();
    soak(ProxyKind::Nginx)
}

#[test]
fn haproxy_upstream_at_five_percent_loss_for_five_minutes_nothing_killed() -> Result<()> {
    require_root();
    soak(ProxyKind::Haproxy)
}
