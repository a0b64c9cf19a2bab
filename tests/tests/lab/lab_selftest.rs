//! The lab itself, without the agent: both address families work, faults hit exactly what
//! they should, and nothing is left behind.

use std::time::Duration;

use lifeline_tests::fixtures::client::{Client, start_server};
use lifeline_tests::{Lab, NetNs, assertions::ss, require_root};

#[test]
fn dual_stack_heartbeats_and_ss() -> anyhow::Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    for (v6, peer) in [(false, "198.51.100.2:6443"), (true, "[2001:db8::2]:6443")] {
        let c = Client::start(
            &lab,
            None,
            &["--peer", peer, "heartbeat", "--interval", "200ms"],
        )?;
        c.wait_event("two heartbeats", Duration::from_secs(10), |e| {
            e.event == "ok" && e.raw["seq"] == 2
        })?;
        let port = c.local_port().expect("port");
        let sock = ss::find(&lab.client, port, Lab::server_addr(v6))?;
        assert!(sock.is_some(), "not in ss: {}", ss::dump(&lab.client));
    }
    // A watch stream: the server pushes an event line every second.
    let w = Client::start(
        &lab,
        None,
        &["--peer", "[2001:db8::2]:6443", "watch", "--every", "1"],
    )?;
    w.wait_event("two watch events", Duration::from_secs(10), |e| {
        e.event == "ok" && e.raw["seq"] == 2
    })?;
    Ok(())
}

/// A flow black hole stops one connection while a new one to the same server still works.
#[test]
fn flow_blackhole_spares_new_connections() -> anyhow::Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let args = ["heartbeat", "--interval", "200ms"];
    let victim = Client::start(&lab, None, &args)?;
    victim.wait_event("a heartbeat", Duration::from_secs(10), |e| e.event == "ok")?;
    let fault = lab.blackhole_flow(victim.local_port().expect("port"))?;
    let fresh = Client::start(&lab, None, &args)?;
    fresh.wait_event("heartbeats on a new flow", Duration::from_secs(10), |e| {
        e.event == "ok" && e.raw["seq"] == 3
    })?;
    let stuck_at = victim.events().len();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        victim.events().len(),
        stuck_at,
        "the black-holed flow still moves: {}",
        victim.dump()
    );
    let last_seq = victim
        .events()
        .iter()
        .filter_map(|e| e.raw["seq"].as_u64())
        .max()
        .unwrap_or(0);
    lab.heal(&fault)?;
    // Healed: the next retransmission gets through (the RTO backoff is still short).
    victim.wait_event("the flow to recover", Duration::from_secs(15), |e| {
        e.raw["seq"].as_u64() > Some(last_seq)
    })?;
    assert!(
        lab.nft_ruleset().matches("drop").count() == 0,
        "rules left: {}",
        lab.nft_ruleset()
    );
    Ok(())
}

#[test]
fn namespaces_are_removed() -> anyhow::Result<()> {
    require_root();
    let name = {
        let ns = NetNs::new("t")?;
        ns.name().to_owned()
    };
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()?;
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains(&name),
        "{name} still listed"
    );
    Ok(())
}

/// The premise of the whole lab: `SOCK_DESTROY` (`ss -K`) on a black-holed socket makes the
/// client's blocked read fail with `ECONNABORTED`, and the fixture reports errno 103.
#[test]
fn ss_kill_gives_econnaborted() -> anyhow::Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let c = Client::start(&lab, None, &["heartbeat", "--interval", "200ms"])?;
    c.wait_event("a heartbeat", Duration::from_secs(10), |e| e.event == "ok")?;
    let _fault = lab.blackhole(lifeline_tests::SERVER_V4.into())?;
    std::thread::sleep(Duration::from_secs(1));
    let port = c.local_port().expect("port").to_string();
    lab.client.exec(
        "ss",
        &["-K", "-t", "src", "198.51.100.1", "sport", "=", &port],
    )?;
    let e = c.wait_event("the error", Duration::from_secs(5), |e| e.event == "error")?;
    assert_eq!(e.errno, Some(103), "{}", e.raw);
    Ok(())
}
