//! Scenario (c): the server process dies and comes back. Its kernel closes the connection
//! (FIN, and RST for anything sent after), so the client notices on its own and re-dials;
//! a peer that answers is not a black hole and the agent has nothing to do.

use std::time::Duration;

use lifeline_tests::assertions::watched::wait_watched;
use lifeline_tests::fixtures::client::start_server;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, mono_ms, require_root};

const STALL: Duration = Duration::from_secs(4);

#[test]
fn peer_restart_needs_no_kill() -> anyhow::Result<()> {
    require_root();
    let mut s = Setup::new()?;
    let mut agent = Agent::start(&s.lab, &s.cgroup)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let client = s.heartbeat_client(&["--redial"])?;
    client.wait_event("a good heartbeat", Duration::from_secs(10), |e| {
        e.event == "ok"
    })?;
    // The agent watches this socket: its silence afterwards is a decision, not blindness.
    let port = client.local_port().expect("port");
    wait_watched(&agent, port, Duration::from_secs(10))?;

    s.server.kill();
    let killed_ms = mono_ms();
    let noticed = client.wait_event("the client to notice", Duration::from_secs(5), |e| {
        e.event == "error" || e.event == "eof"
    })?;
    eprintln!(
        "client noticed {} ms after the server died: {}",
        noticed.mono_ms.saturating_sub(killed_ms),
        noticed.raw
    );
    assert_ne!(
        noticed.errno,
        Some(lifeline_tests::scenarios::scenario::ECONNABORTED),
        "ECONNABORTED means a kill: {}",
        noticed.raw
    );

    std::thread::sleep(Duration::from_secs(2));
    s.server = start_server(&s.lab, &[])?;
    let back = client.wait_event("a re-dial", Duration::from_secs(10), |e| {
        e.event == "redialed"
    })?;
    client.wait_event(
        "heartbeats after the re-dial",
        Duration::from_secs(10),
        |e| e.event == "ok" && e.mono_ms > back.mono_ms,
    )?;
    let new_port = back.local_port.expect("the re-dial reports its local port");
    wait_watched(&agent, new_port, Duration::from_secs(10))?;

    // Give the agent more than a full stall timeout to (wrongly) act.
    std::thread::sleep(STALL * 2 + Duration::from_secs(2));
    let kills: Vec<_> = agent
        .decisions()
        .into_iter()
        .filter(|d| d.action == "kill")
        .collect();
    assert!(
        kills.is_empty(),
        "lifeline killed after a clean peer restart: {:?}",
        kills.iter().map(|d| &d.raw).collect::<Vec<_>>()
    );
    let late_errors = client
        .errors()
        .into_iter()
        .filter(|e| e.mono_ms > back.mono_ms)
        .count();
    assert_eq!(
        late_errors,
        0,
        "errors after the re-dial:\n{}",
        client.dump()
    );
    Ok(())
}
