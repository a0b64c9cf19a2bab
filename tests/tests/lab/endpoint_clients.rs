//! (e) The endpoint-client target: every socket to one of the API endpoint's addresses is
//! watched whoever owns it (kube-proxy, the CNI agent, any node daemon using the node's
//! kubeconfig), and nothing else is: the same process's connection to another address on
//! 443 is neither recorded nor touched.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context as _, Result};
use lifeline_tests::assertions::watched::{blackhole_is_killed, wait_watched};
use lifeline_tests::fixtures::client::start_server;
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::infra::paths::fixture;
use lifeline_tests::{Agent, AgentArgs, Cgroup, Client, Lab, Proc, require_root};

const OTHER_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 3);
const OTHER_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 3);

#[test]
fn endpoint_clients_anywhere_are_healed_and_other_peers_left_alone() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    // Another service on 443, not the endpoint.
    let other = lab.add_host("other", OTHER_V4, OTHER_V6)?;
    let bin = fixture("lab-server")?;
    let mut other_server = Proc::spawn(
        "lab-server",
        other.command(bin.to_str().context("path")?, &["--listen", "[::]:443"]),
    )?;
    other_server.wait_stdout("the other server to listen", Duration::from_secs(10), |l| {
        l.contains("\"listening\"")
    })?;

    let endpoint = Lab::server_addr(false).to_string();
    let args = AgentArgs {
        ports: "443,6443".into(),
        extra: vec![
            "--endpoint-clients".into(),
            "--endpoint".into(),
            endpoint.clone(),
        ],
        ..AgentArgs::default()
    };
    let mut a = Agent::start_targets(&lab, &[], &args)?;
    a.wait_ready(Duration::from_mins(1))?;

    // A client in a cgroup nobody targets, with one connection to the endpoint and one to
    // the other service.
    let cg = Cgroup::new()?;
    let held = SocketAddr::new(OTHER_V4.into(), 443);
    let client = Client::start(
        &lab,
        Some(&cg),
        &[
            "--peer",
            &endpoint,
            "--hold",
            &held.to_string(),
            "heartbeat",
            "--interval",
            "1s",
            "--redial",
        ],
    )?;
    let port = client.local_port().context("no local port")?;
    // Reported after the main connection: on a slow machine (a TCG guest) not yet when
    // `Client::start` returns.
    let held_port = client
        .wait_event("the held connection", Duration::from_secs(10), |e| {
            e.event == "connected"
                && e.raw.get("peer").and_then(serde_json::Value::as_str) == Some(&held.to_string())
        })?
        .local_port
        .context("the held connection was not reported with its port")?;

    let sock = wait_watched(&a, port, Duration::from_secs(10))?;
    assert_eq!(sock.watched_by, ["endpoint"], "{}", sock.raw);
    assert_eq!(sock.source, "sock_ops", "{}", sock.raw);
    assert_eq!(
        sock.owner_pid,
        Some(u64::from(client.proc.pid())),
        "{}",
        sock.raw
    );
    // Two more sweeps: the other connection is still not recorded.
    std::thread::sleep(Duration::from_secs(2));
    let st = a.status()?;
    assert!(
        st.socket_for_port(held_port).is_none(),
        "a non-endpoint peer is watched: {:?}",
        st.sockets
    );

    blackhole_is_killed(&lab, &a, port, Duration::from_secs(30))?;
    assert!(
        lifeline_tests::assertions::ss::find(&lab.client, held_port, held)?.is_some(),
        "the other connection was touched:\n{}",
        lifeline_tests::assertions::ss::dump(&lab.client)
    );
    assert!(
        a.decisions().iter().all(|d| !d.is_for_port(held_port)),
        "a decision about the other connection: {:?}",
        a.decisions()
    );
    kernel::report(
        &features::CONNECT_HOOKS,
        "a client in an untargeted cgroup: its endpoint connection watched by endpoint (owner from the connect hook), its other connection untouched",
    );
    Ok(())
}
