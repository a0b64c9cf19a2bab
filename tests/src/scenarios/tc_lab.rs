//! The steps the tc-chain tests (`tests/tests/lab/tc_neighbour.rs`, `tc_leftovers.rs`) share: an
//! agent with metrics, a watched idle client, where lifeline's program sits, what status
//! says about it, and whether a neighbour's drop holds.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use crate::assertions::tc_chain::{Filter, fast, lifeline_on_dev, tcx};
use crate::fixtures::agent::Agent;
use crate::fixtures::client::Client;
use crate::fixtures::tc_neighbour::{DEV, Neighbour, connect};
use crate::infra::kernel::{self, features};
use crate::infra::lab::{SERVER_PORT, SERVER_V4};
use crate::infra::util::wait_until;
use crate::scenarios::idle_lab::{SERVER, agent_with, wait_armed};
use crate::scenarios::scenario::Setup;

/// The agent's metrics, inside the client namespace.
pub const METRICS: &str = "127.0.0.1:9464";
/// A port nobody drops and nothing listens on: its SYN is answered with an RST.
pub const CONTROL_PORT: u16 = 7779;

/// An agent on the scenario's cgroup with its metrics served, ready.
///
/// # Errors
/// As `agent_with`.
pub fn agent(s: &Setup) -> Result<Agent> {
    agent_args(s, &[])
}

/// `agent` with more flags.
///
/// # Errors
/// As `agent_with`.
pub fn agent_args(s: &Setup, extra: &[&str]) -> Result<Agent> {
    let mut args = vec!["--metrics-addr", METRICS];
    args.extend_from_slice(extra);
    agent_with(s, &args)
}

/// An idle client (a watch stream) in the watched cgroup, once the agent has armed its
/// socket: the socket the test is about is watched.
///
/// # Errors
/// When it does not connect or is not armed.
pub fn idle_client(s: &Setup, agent: &Agent) -> Result<Client> {
    idle_client_armed(s, agent, "1s,1s,20")
}

/// `idle_client`, armed with keepalive `want` (where the kernel arms it at all).
///
/// # Errors
/// As `idle_client`.
pub fn idle_client_armed(s: &Setup, agent: &Agent, want: &str) -> Result<Client> {
    let args = ["--peer", SERVER, "watch", "--every", "60", "--redial"];
    let client = Client::start(&s.lab, Some(&s.cgroup), &args)?;
    client.wait_event("the first event", Duration::from_secs(10), |e| {
        e.event == "ok"
    })?;
    let port = client.local_port().context("no local port")?;
    let want = if kernel::has(&features::KEEPALIVE_SET) {
        want
    } else {
        "not armed"
    };
    wait_armed(agent, port, want)?;
    Ok(client)
}

/// Waits until status says `state` ("on", "hidden", "unavailable") with `DEV` at `reach`
/// ("out", "hidden"; ignored when empty); returns the summary and `DEV`'s chain.
///
/// # Errors
/// When it does not within 30 s (with the last status seen).
pub fn wait_fast(agent: &Agent, state: &str, reach: &str) -> Result<(String, Value)> {
    let mut last = String::new();
    wait_until(
        &format!("status fast_probes {state} ({DEV} {reach})"),
        Duration::from_secs(30),
        Duration::from_millis(200),
        || {
            let f = fast(agent)?;
            last = format!("{}: {}", f.state, f.summary);
            let dev = f.devices.iter().find(|d| d.device == DEV);
            let chain = dev.map_or(Value::Null, |d| d.chain.clone());
            let want =
                f.state == state && (reach.is_empty() || dev.is_some_and(|d| d.reach == reach));
            Ok(want.then_some((f.summary, chain)))
        },
    )
    .with_context(|| format!("last: {last}"))
}

/// lifeline's program on `DEV`, waited for: tcx (first in the chain) where the kernel has
/// tcx, else its one clsact filter, which is returned.
///
/// # Errors
/// When it is not there within 30 s, or somewhere else.
pub fn placed(s: &Setup) -> Result<Option<Filter>> {
    let ns = &s.lab.client;
    let found = wait_until(
        "lifeline's program on the device",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            let (links, filters) = lifeline_on_dev(ns)?;
            Ok((links + filters.len() > 0).then_some((links, filters)))
        },
    )?;
    if kernel::has(&features::TCX) {
        let chain = tcx(ns)?.unwrap_or_default();
        ensure!(
            found == (1, Vec::new())
                && chain.first().map(String::as_str)
                    == Some(&crate::assertions::tc_chain::PROGRAM[..15]),
            "tcx: lifeline's link must be the one and first: tcx {chain:?}, filters {:?}",
            found.1
        );
        return Ok(None);
    }
    ensure!(
        found.0 == 0 && found.1.len() == 1,
        "one clsact filter of lifeline's: {found:?}"
    );
    Ok(found.1.into_iter().next())
}

/// The neighbour's drop holds: a connection to the server on its port times out, where a
/// port nobody drops is refused (its SYN got through) and the API port connects.
///
/// # Errors
/// When any of the three differs.
pub fn drop_holds(s: &Setup, n: &Neighbour) -> Result<()> {
    let ns = &s.lab.client;
    let to = |p: u16| SocketAddr::from((SERVER_V4, p));
    let within = Duration::from_millis(1500);
    let (dropped, control, api) = (
        connect(ns, to(n.port), within)?,
        connect(ns, to(CONTROL_PORT), within)?,
        connect(ns, to(SERVER_PORT), within)?,
    );
    ensure!(
        (dropped.as_str(), control.as_str(), api.as_str()) == ("timeout", "refused", "connected"),
        "port {} (dropped by {:?}/{:?}): {dropped}; port {CONTROL_PORT}: {control}; port {SERVER_PORT}: {api}",
        n.port,
        n.place,
        n.verdict
    );
    ensure!(n.fresh_counts()?.1 > 0, "the neighbour counted no drop");
    Ok(())
}

/// One metric of the agent (0 when absent).
///
/// # Errors
/// When the endpoint does not answer.
pub fn metric(s: &Setup, series: &str) -> Result<f64> {
    let m = crate::assertions::metrics::scrape_until_ok(
        "metrics",
        &s.lab.client.path(),
        METRICS.parse()?,
    )?;
    Ok(m.get(series).copied().unwrap_or(0.0))
}
