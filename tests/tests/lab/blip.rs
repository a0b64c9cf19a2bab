//! First, do no harm (issue 33, tests a and b).
//!
//! (a) The whole path to the only endpoint address black-holed for 3 s, then for 8 s, both
//!     directions, DNS unchanged: first without lifeline, then with it, over the same lab at
//!     the same phase of every client's cycle (`lifeline_tests::scenarios::blip`). With lifeline, the
//!     two clients of the first run are older than the agent (adopted, the common case on a
//!     node) and two more connect after it started (armed at their handshake). Each is a
//!     Go client dialing with kubelet's `net.Dialer` (a watch stream) or the lab's heartbeat
//!     client. Nothing but holds may be decided, and each client is served again on its
//!     original connection no later than without lifeline, plus 0.5 s.
//! (b) One address of two black-holed for good: healed as today (a kill within 7 s), and no
//!     further kill once the client is on the live address, past the time a peer probe's
//!     finding stands.

use std::time::Duration;

use anyhow::{Result, ensure};
use lifeline_tests::assertions::watched::wait_watched;
use lifeline_tests::infra::lab::SERVER_V4;
use lifeline_tests::scenarios::blip::{blip, on_original, port_of, served_again};
use lifeline_tests::scenarios::endpoint_scenario::{
    agent_resolved, back_on, check_kill, wait_kill, watched_on,
};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, AgentArgs, ApiLab, Client, api, mono_ms, require_root};

/// How much later than without lifeline a client may be served again.
const MARGIN_MS: u64 = 500;
const SERVER: &str = "198.51.100.2:6443";

/// The lab's heartbeat client (one request a second, on whole seconds) and a Go client
/// holding a watch stream (an event a second, on whole seconds), both served once.
fn clients(s: &Setup) -> Result<[(&'static str, Client); 2]> {
    let hb = s.heartbeat_client(&["--aligned"])?;
    let args = ["-peer", SERVER, "-every", "1", "-keepalive", "30s"];
    let go = Client::start_bin("go-watch", &s.lab, Some(&s.cgroup), &args)?;
    for c in [&hb, &go] {
        c.wait_event("served", Duration::from_secs(10), |e| e.event == "ok")?;
    }
    Ok([("heartbeat", hb), ("go-watch", go)])
}

fn blip_costs_nothing(len: Duration) -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let old = clients(&s)?;
    let b = blip(&s.lab, SERVER_V4.into(), len)?;
    let mut base = Vec::new();
    for (name, c) in &old {
        base.push((*name, served_again(c, &b, Duration::from_secs(30))?));
    }
    eprintln!("without lifeline, served again after: {base:?} ms");

    let args = AgentArgs {
        stall_timeout: None,
        extra: vec!["--endpoint".into(), SERVER.into()],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let new = clients(&s)?;
    let all: Vec<(&str, &Client)> = old.iter().chain(&new).map(|(n, c)| (*n, c)).collect();
    for (_, c) in &all {
        wait_watched(&agent, port_of(c)?, Duration::from_secs(15))?;
    }
    let b = blip(&s.lab, SERVER_V4.into(), len)?;
    for (i, (name, c)) in all.iter().enumerate() {
        let served = served_again(c, &b, Duration::from_secs(30))?;
        let without = base
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, ms)| *ms);
        let kind = if i < old.len() { "adopted" } else { "new" };
        eprintln!(
            "with lifeline, {kind} {name}: served again after {served} ms (without: {without})"
        );
        ensure!(
            served <= without + MARGIN_MS,
            "{kind} {name} served again {served} ms after the blip began, {without} ms without lifeline"
        );
        on_original(c, port_of(c)?)?;
    }
    let acted: Vec<_> = agent
        .decisions()
        .into_iter()
        .filter(|d| d.action != "hold")
        .collect();
    ensure!(acted.is_empty(), "decided more than holds: {acted:?}");
    Ok(())
}

#[test]
fn a_3s_blip_costs_nothing() -> Result<()> {
    blip_costs_nothing(Duration::from_secs(3))
}

#[test]
fn an_8s_blip_costs_nothing() -> Result<()> {
    blip_costs_nothing(Duration::from_secs(8))
}

#[test]
fn one_dead_address_of_two_is_healed_once() -> Result<()> {
    require_root();
    let set = [api(1, false), api(2, false)];
    let l = ApiLab::new(&set)?;
    let agent = agent_resolved(&l, &ApiLab::agent_args(None, &[]), &set)?;
    let c = l.kube_client(&[])?;
    let old = watched_on(&agent, &c, api(1, false), "ok")?;
    let _fault = l.lab.blackhole(api(1, false))?;
    let fault_ms = mono_ms();
    let kill = wait_kill(&agent, old.local_port, Duration::from_secs(20))?;
    let after = kill.at_ms - fault_ms;
    ensure!(
        after <= 7_000,
        "killed {after} ms after the fault; want <= 7 s"
    );
    check_kill(&kill, &kill.verdict)?;
    let new = back_on(&c, &old, api(2, false), "ok", Duration::from_secs(15))?;
    // Past the 10 s a dead finding stands: the new connection, and nothing else, is left.
    std::thread::sleep(Duration::from_secs(12));
    let kills: Vec<_> = agent
        .decisions()
        .into_iter()
        .filter(|d| d.action == "kill")
        .collect();
    ensure!(
        kills.len() == 1,
        "one kill, of the dead address's socket: {kills:?}"
    );
    ensure!(
        agent.kills_of(new.local_port).is_empty(),
        "the re-dial to the live address was killed: {:?}",
        agent.decisions()
    );
    eprintln!(
        "killed {after} ms after the fault ({}); the re-dial on api2 left alone",
        kill.verdict
    );
    Ok(())
}
