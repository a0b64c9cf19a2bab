//! Steps the endpoint scenarios share: an agent that has resolved the endpoint, a client
//! watched on api1, the ELB rotation fault, and waiting for a kill with the evidence.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::assertions::decision::Decision;
use crate::assertions::endpoint_log::RESOLVED;
use crate::fixtures::agent::Agent;
use crate::fixtures::client::Client;
use crate::fixtures::kube::Connection;
use crate::infra::api_addrs::{ENDPOINT, api};
use crate::infra::apilab::ApiLab;
use crate::infra::nft::Fault;
use crate::infra::util::{mono_ms, wait_until};

/// Starts the agent with `args`, waits until it is ready and has resolved the endpoint to
/// exactly `want` (so a later DNS change is a change to the agent too).
///
/// # Errors
/// When it does not start, or never reports that set within 20 s.
pub fn agent_resolved(l: &ApiLab, args: &crate::AgentArgs, want: &[IpAddr]) -> Result<Agent> {
    let mut agent = Agent::start_with(&l.lab, &l.cgroup, args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let mut want: Vec<String> = want.iter().map(ToString::to_string).collect();
    want.sort_unstable();
    wait_until(
        "the endpoint resolved",
        Duration::from_secs(20),
        Duration::from_millis(100),
        || {
            let found = agent.endpoint_events_with(RESOLVED).into_iter().find(|e| {
                let mut got = e.addrs.clone();
                got.sort_unstable();
                e.endpoint == ENDPOINT && got == want
            });
            Ok(found.map(|_| ()))
        },
    )
    .with_context(|| {
        format!(
            "want {want:?}; lifeline's stderr:\n{}",
            agent.proc.stderr_text()
        )
    })?;
    Ok(agent)
}

/// Waits for the client's first heartbeat (or watch event) and for the agent to list its
/// socket; returns the connection, which must go to `peer`.
///
/// # Errors
/// When the client is elsewhere, silent, or not watched within 10 s.
pub fn watched_on(agent: &Agent, c: &Client, peer: IpAddr, kind: &str) -> Result<Connection> {
    let conn = c.current().context("the client never connected")?;
    ensure!(conn.peer.ip() == peer, "client on {conn:?}, want {peer}");
    c.wait_event("a first success", Duration::from_secs(10), |e| {
        e.event == kind
    })?;
    wait_until(
        "the socket in lifeline status",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            Ok(agent
                .status()
                .ok()
                .and_then(|st| st.socket_for_port(conn.local_port).cloned()))
        },
    )
    .with_context(|| agent.status_table().unwrap_or_default())?;
    Ok(conn)
}

/// The ELB rotation: the name moves from api1 to api2 and api1 vanishes (black hole) at the
/// same moment. Returns the fault and its time.
///
/// # Errors
/// When dnsmasq or nft fail.
pub fn rotate_away_from_api1(l: &ApiLab, v6: bool) -> Result<(Fault, u64)> {
    let fault = l.lab.blackhole(api(1, v6))?;
    let fault_ms = mono_ms();
    l.dns.set(&[api(2, v6)])?;
    Ok((fault, fault_ms))
}

/// Waits up to `timeout` for a kill decision about local port `port`.
///
/// # Errors
/// On timeout, with the agent's log.
pub fn wait_kill(agent: &Agent, port: u16, timeout: Duration) -> Result<Decision> {
    wait_until(
        "a kill decision",
        timeout,
        Duration::from_millis(100),
        || Ok(agent.kills_of(port).into_iter().next()),
    )
    .with_context(|| format!("lifeline's stderr:\n{}", agent.proc.stderr_text()))
}

/// The decision is a successful kill with this verdict, about the endpoint.
///
/// # Errors
/// When it is not.
pub fn check_kill(d: &Decision, verdict: &str) -> Result<()> {
    ensure!(
        d.verdict == verdict,
        "verdict {:?}, want {verdict:?}: {}",
        d.verdict,
        d.raw
    );
    ensure!(d.outcome == "killed", "outcome {:?}: {}", d.outcome, d.raw);
    // A stall is judged without the endpoint (the field may be absent); a dead peer or an
    // orphan is about the endpoint, and must say which.
    let lenient = verdict == "stalled" && d.endpoint.is_empty();
    ensure!(
        lenient || d.endpoint == ENDPOINT,
        "endpoint {:?}: {}",
        d.endpoint,
        d.raw
    );
    Ok(())
}

/// An orphan migrated at once (no grace, no spread), with the failed round trip that made it
/// so among `evidence`.
///
/// # Errors
/// When it is not.
pub fn check_early(kill: &Decision, evidence: &[&str]) -> Result<()> {
    check_kill(kill, "orphaned")?;
    ensure!(
        evidence.contains(&kill.early.as_str()),
        "early {:?}, want one of {evidence:?}: {}",
        kill.early,
        kill.raw
    );
    Ok(())
}

/// After a kill: the client saw ECONNABORTED and is back, on `peer`, with a success of
/// `kind` on the new connection within `timeout`. Returns the new connection.
///
/// # Errors
/// When any of these does not happen.
pub fn back_on(
    c: &Client,
    old: &Connection,
    peer: IpAddr,
    kind: &str,
    timeout: Duration,
) -> Result<Connection> {
    let err = c.wait_event("the client's error", Duration::from_secs(5), |e| {
        e.event == "error" && e.local_port == Some(old.local_port)
    })?;
    ensure!(
        err.errno == Some(crate::scenarios::scenario::ECONNABORTED),
        "not ECONNABORTED: {}",
        err.raw
    );
    let now = wait_until(
        "the client on its new peer",
        timeout,
        Duration::from_millis(100),
        || {
            Ok(c.current()
                .filter(|n| n.local_port != old.local_port && n.peer.ip() == peer))
        },
    )
    .with_context(|| c.dump())?;
    c.wait_event(
        "a success on the new connection",
        Duration::from_secs(10),
        |e| e.event == kind && e.local_port == Some(now.local_port),
    )?;
    Ok(now)
}
