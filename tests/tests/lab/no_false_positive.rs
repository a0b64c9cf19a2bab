//! Scenario (b): healthy traffic is never touched. For 60 s, at the same time and all in the
//! watched cgroup: a bulk upload at full speed, an idle connection, a heartbeat, and a
//! heartbeat whose flow loses 5 % of its packets (both directions). The agent must not kill
//! anything, no client may see an error, and all four sockets stay ESTABLISHED.
//! `LAB_NO_FALSE_POSITIVE_SECS` shortens the run (the kernel matrix's guests use 20 s).

use std::time::Duration;

use lifeline_tests::assertions::watched::wait_watched;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, Client, Lab, assertions::ss, require_root};

/// 60 s, or `LAB_NO_FALSE_POSITIVE_SECS`.
fn run_for() -> Duration {
    let secs = std::env::var("LAB_NO_FALSE_POSITIVE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

#[test]
fn healthy_connections_are_left_alone() -> anyhow::Result<()> {
    require_root();
    let run = run_for();
    let s = Setup::new()?;
    let mut agent = Agent::start(&s.lab, &s.cgroup)?;
    agent.wait_ready(Duration::from_mins(1))?;

    let start = |args: &[&str]| Client::start(&s.lab, Some(&s.cgroup), args);
    let secs = run.as_secs().to_string();
    let bulk = start(&["bulk", "--seconds", &secs])?;
    let idle = start(&["idle"])?;
    let heartbeat = start(&["heartbeat", "--interval", "1s"])?;
    let lossy = start(&["heartbeat", "--interval", "1s"])?;
    let lossy_port = lossy.local_port().expect("port");
    let loss = s.lab.loss_flow(lossy_port, 5)?;
    let clients = [
        ("bulk", &bulk),
        ("idle", &idle),
        ("heartbeat", &heartbeat),
        ("lossy heartbeat", &lossy),
    ];

    // "Nothing was killed" means something only if all four were watched.
    for (name, c) in &clients {
        let port = c.local_port().expect("port");
        let sock = wait_watched(&agent, port, Duration::from_secs(10))
            .map_err(|e| anyhow::anyhow!("{name}: {e:#}"))?;
        assert_eq!(sock.source, "sock_ops", "{name}: {}", sock.raw);
    }
    // Watch the whole run, failing early on the first kill or client error.
    let started = std::time::Instant::now();
    for _ in 0..(run.as_secs() + 5) {
        if started.elapsed() >= run + Duration::from_secs(1) {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
        let kills: Vec<_> = agent
            .decisions()
            .into_iter()
            .filter(|d| d.action == "kill")
            .collect();
        assert!(
            kills.is_empty(),
            "lifeline killed a healthy socket: {:?}",
            kills.iter().map(|d| &d.raw).collect::<Vec<_>>()
        );
        for (name, c) in &clients {
            assert!(
                c.errors().is_empty(),
                "{name} client saw an error:\n{}",
                c.dump()
            );
        }
    }

    let established = ss::established(&s.lab.client)?;
    for (name, c) in &clients {
        let port = c.local_port().expect("port");
        let found = established
            .iter()
            .any(|x| x.local.port() == port && x.peer == Lab::server_addr(false));
        assert!(
            found,
            "{name} socket (port {port}) not ESTABLISHED:\n{}",
            ss::dump(&s.lab.client)
        );
    }
    // The traffic was real: the upload moved data, the heartbeats kept answering.
    let bulk_bytes = bulk
        .events()
        .iter()
        .filter_map(|e| e.raw["bytes"].as_u64())
        .max()
        .unwrap_or(0);
    // 100 MiB a minute: far below what any machine moves, so only a stuck upload fails.
    let want = (100u64 << 20) * run.as_secs() / 60;
    assert!(bulk_bytes > want, "bulk moved only {bulk_bytes} bytes");
    for (name, c) in [("heartbeat", &heartbeat), ("lossy heartbeat", &lossy)] {
        let oks = c.events().iter().filter(|e| e.event == "ok").count();
        assert!(
            oks as u64 >= run.as_secs() * 2 / 3,
            "{name} answered only {oks} heartbeats in {run:?}:\n{}",
            c.dump()
        );
    }
    // The loss was real: the rules saw the flow and (almost surely) dropped some of it.
    let (seen, dropped) = s.lab.counters(&loss)?;
    let lossy_ss = established.iter().find(|x| x.local.port() == lossy_port);
    let retrans = lossy_ss.map_or("", |x| x.info.as_str());
    eprintln!("lossy flow: {seen} packets, {dropped} dropped by the wire; ss: {retrans}");
    assert!(
        seen >= 100 * run.as_secs() / 60,
        "the loss rule saw only {seen} packets of the lossy flow"
    );
    assert_still_watched_and_not_dead(&agent, &clients)?;
    let decisions = agent.decisions();
    eprintln!("decisions during the run: {}", decisions.len());
    assert!(
        decisions.iter().all(|d| d.action != "kill"),
        "kill decisions: {decisions:?}"
    );
    Ok(())
}

/// Still watched at the end (not dropped from the map along the way), none judged dead.
fn assert_still_watched_and_not_dead(
    agent: &Agent,
    clients: &[(&str, &Client)],
) -> anyhow::Result<()> {
    let st = agent.status()?;
    for (name, c) in clients {
        let port = c.local_port().expect("port");
        let sock = st
            .socket_for_port(port)
            .ok_or_else(|| anyhow::anyhow!("{name} is no longer watched: {:?}", st.sockets))?;
        eprintln!(
            "status: {name} {} -> {} verdict={} retransmits={}",
            sock.local, sock.peer, sock.verdict, sock.retransmits
        );
        assert!(
            !matches!(sock.verdict.as_str(), "stalled" | "silent"),
            "{name} judged {}: {}",
            sock.verdict,
            sock.raw
        );
    }
    Ok(())
}
