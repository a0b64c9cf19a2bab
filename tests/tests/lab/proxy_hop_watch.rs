//! Issue 21: what the agent watches for the hop it discovered through a node-local proxy
//! (see `proxy_discovery.rs` for how it finds it), at the agent's rules: the proxy's
//! upstream socket is the endpoint's member, kubelet's loopback socket none, and a reload of
//! the proxy's list moves the endpoint's set as a DNS change would.

use std::time::Duration;

use anyhow::{Context as _, Result};
use lifeline_tests::fixtures::fake_kubelet::kubeconfig;
use lifeline_tests::fixtures::proxy::{NodeProxy, ProxyKind};
use lifeline_tests::infra::api_addrs::{API_NAME, API_V4, DNS_V4};
use lifeline_tests::infra::util::{TempDir, wait_until};
use lifeline_tests::{Agent, AgentArgs, ApiLab, Client, FakeKubelet, require_root};

const READY: Duration = Duration::from_mins(1);

/// What the agent then watches for the hop: kubespray's nginx in front of two API servers,
/// kubelet's stand-in (`kube-client`, in kubelet's cgroup) dialing 127.0.0.1:6443. The
/// proxy's upstream socket is the endpoint's member (the endpoint-clients rule watches it,
/// whoever owns it); kubelet's loopback socket is watched and is no member of any endpoint.
#[test]
fn the_proxys_upstream_socket_is_the_endpoints_member() -> Result<()> {
    require_root();
    let api = ApiLab::new(&[API_V4[0].into()])?;
    let ups = lifeline_tests::scenarios::proxy_lab::upstreams();
    let proxy = NodeProxy::start(&api.lab.client, ProxyKind::Nginx, &ups)?;
    let _kubelet = FakeKubelet::start(
        &api.lab.client,
        &api.cgroup,
        &kubeconfig("https://127.0.0.1:6443"),
    )?;
    let args = AgentArgs {
        extra: vec!["--endpoint-clients".into()],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&api.lab, &api.cgroup, &args)?;
    agent.wait_ready(READY)?;
    let hosts = TempDir::new()?;
    let hosts_file = hosts.path().join("hosts");
    std::fs::write(&hosts_file, format!("127.0.0.1 {API_NAME}\n"))?;
    let dns = DNS_V4.to_string();
    let client_args = [
        "--server",
        API_NAME,
        "--dns-server",
        &dns,
        "--hosts-file",
        hosts_file.to_str().context("utf-8")?,
        "--heartbeat",
        "1s",
    ];
    let _client = Client::start_bin("kube-client", &api.lab, Some(&api.cgroup), &client_args)?;
    let upstream: Vec<String> = ups.iter().map(ToString::to_string).collect();
    let (up, down) = wait_until(
        "the proxy's upstream socket and kubelet's loopback one in status",
        Duration::from_secs(20),
        Duration::from_millis(200),
        || {
            let st = agent.status()?;
            let up = st
                .sockets
                .iter()
                .find(|s| upstream.contains(&s.peer))
                .cloned();
            let down = st
                .sockets
                .iter()
                .find(|s| s.peer == "127.0.0.1:6443")
                .cloned();
            Ok(up.zip(down))
        },
    )?;
    eprintln!("upstream: {:?}\nloopback: {:?}", up.raw, down.raw);
    assert_eq!(
        up.endpoint_member.as_deref(),
        Some("in-set"),
        "{:?}",
        up.raw
    );
    assert!(
        up.watched_by.iter().any(|w| w == "endpoint"),
        "{:?}",
        up.watched_by
    );
    assert_eq!(up.owner_comm.as_deref(), Some("nginx"), "{:?}", up.raw);
    assert_eq!(
        down.endpoint_member, None,
        "kubelet's loopback socket is no member: {:?}",
        down.raw
    );
    assert_eq!(down.verdict, "healthy", "{:?}", down.raw);

    // A reload that drops an upstream changes the set within the re-read (5 s), as a DNS
    // answer without it would: its sockets are leaving, then orphaned after the grace.
    let mut proxy = proxy;
    proxy.reload(&ups[1..])?;
    let kept = ups[1].ip().to_string();
    wait_until(
        "the reloaded upstream list in the endpoint's set",
        Duration::from_secs(12),
        Duration::from_millis(200),
        || {
            let st = agent.status()?;
            let addrs: Vec<String> = st.endpoints.iter().flat_map(|e| e.addrs.clone()).collect();
            Ok((addrs == [kept.clone()]).then_some(()))
        },
    )?;
    let infos = agent.messages("INFO");
    assert!(
        infos.iter().any(|m| m.contains(&format!(
            "the proxy's upstreams on port 6443 are now [{kept}]"
        ))),
        "{infos:#?}"
    );
    Ok(())
}
