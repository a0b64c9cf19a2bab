//! Issue 37: a node-local proxy started AFTER the agent, in kubespray's order (kubelet starts
//! the nginx-proxy static pod; the agent's pod is often up first). kubelet's stand-in
//! dials `127.0.0.1:6443` as soon as the proxy listens, before the agent has found the proxy
//! and its upstreams, so the proxy's upstream connection is one the agent adopts. The
//! upstream flow black-holed 2 s after the client connected must be killed as fast as with
//! the proxy started first (`proxy_blackhole.rs`, the bench's proxy rows): silent within
//! the born-under-lifeline bound (`idle_lab::FAST_SILENT_BUDGET`), its octet probes counted.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::fixtures::proxy::ProxyKind;
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::idle_lab::FAST_SILENT_BUDGET;
use lifeline_tests::scenarios::proxy_lab::ProxyLab;
use lifeline_tests::{mono_ms, require_root, wait_until};

/// kubespray's node: the proxy's static pod starts a few seconds after the agent.
const PROXY_AFTER: Duration = Duration::from_secs(5);
/// The fault comes this long after the client connected.
const FAULT_AFTER: Duration = Duration::from_secs(2);

fn proxy_after_agent(kind: ProxyKind) -> Result<()> {
    let mut lab = ProxyLab::agent_first(kind, PROXY_AFTER)?;
    lab.start_client_beside_kubelet()?;
    let connected = lab
        .client()
        .events()
        .iter()
        .find(|e| e.event == "connected")
        .map(|e| e.mono_ms)
        .context("the client's connected event")?;
    let wait = (connected + u64::try_from(FAULT_AFTER.as_millis())?).saturating_sub(mono_ms());
    std::thread::sleep(Duration::from_millis(wait));
    let (_faults, flows, t0) = lab.blackhole_upstreams()?;
    let agent = lab.agent.as_ref().context("agent")?;
    for local in flows {
        let d = wait_until(
            "the kill of a proxy's upstream socket",
            FAST_SILENT_BUDGET + Duration::from_secs(20),
            Duration::from_millis(100),
            || {
                Ok(agent
                    .decisions()
                    .into_iter()
                    .find(|d| d.action == "kill" && d.is_for_port(local.port())))
            },
        )
        .with_context(|| format!("lifeline's stderr:\n{}", agent.proc.stderr_text()))?;
        let after = d.logged_ms.unwrap_or(d.at_ms).saturating_sub(t0);
        let octets = d.probe_bytes.unwrap_or(0);
        eprintln!(
            "proxy {} started {PROXY_AFTER:?} after the agent: upstream {local} killed ({} verdict, {octets} octet probes) {after} ms after the black hole: {}",
            kind.name(),
            d.verdict,
            d.raw
        );
        ensure!(d.outcome == "killed", "not killed: {}", d.raw);
        if kernel::has(&features::FAST_PROBES) {
            ensure!(
                d.verdict == "silent"
                    && u128::from(after) <= FAST_SILENT_BUDGET.as_millis()
                    && octets >= 8,
                "upstream {local} killed {after} ms after the fault ({} verdict) with {octets} octet probes; a proxy started first is killed within {FAST_SILENT_BUDGET:?} with >= 8",
                d.verdict
            );
        }
    }
    // Whether the agent found the proxy before or after the fault (kubelet's connection is
    // what it looks for, every few seconds): both must be within the bound.
    let adopted: Vec<String> = agent
        .log()
        .into_iter()
        .filter_map(|(at, v)| {
            let f = v.get("fields")?;
            (f.get("message")?.as_str()? == "pre-existing sockets adopted").then(|| {
                format!(
                    "{} ms after the fault: {}",
                    i128::from(at) - i128::from(t0),
                    f
                )
            })
        })
        .collect();
    eprintln!("adoptions: {adopted:?}");
    let served = lab
        .served_again(t0, Duration::from_secs(30))?
        .context("the client was not served again within 30 s of the kill")?;
    eprintln!(
        "client served again {} ms after the black hole",
        served - t0
    );
    Ok(())
}

#[test]
fn nginx_started_after_the_agent_upstream_blackhole_is_killed_fast() -> Result<()> {
    require_root();
    proxy_after_agent(ProxyKind::Nginx)
}

#[test]
fn haproxy_started_after_the_agent_upstream_blackhole_is_killed_fast() -> Result<()> {
    require_root();
    proxy_after_agent(ProxyKind::Haproxy)
}
