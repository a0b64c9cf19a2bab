//! Issue 21, test d: kubelet's kubeconfig says `https://127.0.0.1:PORT` and a node-local
//! proxy carries the connection on. With no `--endpoint`, the agent finds the proxy by its
//! listening socket (owner, cgroup, process), reads its upstream list (the real nginx and
//! haproxy from Debian configured as kubespray does; a k3s agent's load-balancer file), and
//! follows those upstreams as the endpoint: `lifeline status` and `lifeline check` show the
//! hop `kubelet -> 127.0.0.1:6443 (nginx, pid N) -> [upstreams]`. A listener that is not
//! root's names nothing: check says so as a warning.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result};
use lifeline_tests::fixtures::fake_kubelet::kubeconfig;
use lifeline_tests::fixtures::local_listener::{
    LocalListener, k3s_load_balancer_json, write_agent_etc,
};
use lifeline_tests::fixtures::proxy::{NodeProxy, ProxyKind};
use lifeline_tests::infra::util::{TempDir, wait_until};
use lifeline_tests::{Agent, Cgroup, FakeKubelet, Lab, require_root};

const READY: Duration = Duration::from_mins(1);

fn upstreams() -> Vec<SocketAddr> {
    lifeline_tests::scenarios::proxy_lab::upstreams()
}

/// How the hop names the proxy's cgroup: the lab's nginx is a static pod, its haproxy a unit.
fn component(p: &NodeProxy) -> String {
    match p.kind {
        ProxyKind::Nginx => {
            let slice = p.cgroup.path().parent().and_then(|d| d.file_name());
            let uid = slice
                .and_then(|s| s.to_str())
                .and_then(|s| s.strip_prefix("kubepods-burstable-pod"))
                .and_then(|s| s.strip_suffix(".slice"))
                .unwrap_or_default();
            format!("static pod {uid}")
        }
        ProxyKind::Haproxy => "systemd unit haproxy.service".into(),
    }
}

/// Something accepting on the first upstream (the lab's server host), so the proxy keeps
/// kubelet's connection open as it would with a real API server behind it.
fn api_server(lab: &Lab) -> Result<LocalListener> {
    LocalListener::start(
        &lab.server,
        None,
        None,
        ("apiserver", "0.0.0.0:6443".parse()?),
        &[],
    )
}

fn listed(ups: &[SocketAddr]) -> String {
    let v: Vec<String> = ups.iter().map(ToString::to_string).collect();
    v.join(", ")
}

/// `lifeline check`'s endpoint row, run in the node's namespace as an operator would.
fn check_row(lab: &Lab, kubelet_cgroup: &Cgroup) -> Result<String> {
    let bin = lifeline_tests::infra::paths::lifeline()?;
    let cg = kubelet_cgroup.path().to_str().context("utf-8")?;
    let mut cmd = lab
        .client
        .command(bin.to_str().context("utf-8")?, &["check", "--cgroup", cg]);
    let out = lifeline_tests::infra::cmd::output(&mut cmd)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout
        .lines()
        .find(|l| l.starts_with("endpoint "))
        .with_context(|| format!("no endpoint row in {stdout}"))?;
    eprintln!("check: {row}");
    Ok(row.to_owned())
}

/// Starts the agent (kubelet's cgroup its target) and checks that status and check both
/// show `hop`, and that the endpoint's addresses are the upstreams'.
fn assert_followed(
    lab: &Lab,
    kubelet_cgroup: &Cgroup,
    hop: &str,
    ups: &[SocketAddr],
) -> Result<()> {
    let row = check_row(lab, kubelet_cgroup)?;
    assert!(
        row.contains(" pass ") && row.contains(hop),
        "want {hop:?} in {row}"
    );
    assert!(
        row.contains("the proxy's sockets to these upstreams"),
        "{row}"
    );

    let mut agent = Agent::start(lab, kubelet_cgroup)?;
    agent.wait_ready(READY)?;
    let mut want: Vec<String> = ups.iter().map(|u| u.ip().to_string()).collect();
    want.sort();
    let st = wait_until(
        "the upstreams in the endpoint's set",
        Duration::from_secs(15),
        Duration::from_millis(200),
        || {
            let st = agent.status()?;
            let mut addrs: Vec<String> =
                st.endpoints.iter().flat_map(|e| e.addrs.clone()).collect();
            addrs.sort();
            Ok((addrs == want).then_some(st))
        },
    )
    .with_context(|| format!("{:#?}", agent.messages("WARN")))?;
    eprintln!("status: {:?} from {:?}", st.endpoints, st.endpoint_source);
    let source = st.endpoint_source.context("no endpoint source")?;
    assert!(source.contains(hop), "want {hop:?} in {source:?}");
    let table = agent.status_table()?;
    assert!(table.contains(hop), "{table}");
    let infos = agent.messages("INFO");
    assert!(
        infos
            .iter()
            .any(|m| m.contains(hop) && m.contains("the endpoint is the proxy's upstreams")),
        "no info line naming the hop: {infos:#?}"
    );
    Ok(())
}

fn through_real_proxy(kind: ProxyKind) -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let kubelet_cgroup = Cgroup::new()?;
    let ups = upstreams();
    let _api = api_server(&lab)?;
    let proxy = NodeProxy::start(&lab.client, kind, &ups)?;
    let _kubelet = FakeKubelet::start(
        &lab.client,
        &kubelet_cgroup,
        &kubeconfig("https://127.0.0.1:6443"),
    )?;
    let hop = format!(
        "kubelet -> 127.0.0.1:6443 ({}, pid {}, {}) -> [{}] from ",
        kind.name(),
        proxy.proc.pid(),
        component(&proxy),
        listed(&ups)
    );
    assert_followed(&lab, &kubelet_cgroup, &hop, &ups)
}

#[test]
fn nginx_stream_upstreams_are_the_endpoint() -> Result<()> {
    through_real_proxy(ProxyKind::Nginx)
}

#[test]
fn haproxy_backend_servers_are_the_endpoint() -> Result<()> {
    through_real_proxy(ProxyKind::Haproxy)
}

/// A k3s agent: kubelet runs inside it and its kubeconfig says 127.0.0.1:6444, where the
/// agent's load balancer listens; the servers are in its data directory's file.
#[test]
fn k3s_load_balancer_file_is_the_endpoint() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let kubelet_cgroup = Cgroup::new()?;
    let agent_cgroup = Cgroup::unit("k3s-agent")?;
    let data = TempDir::new()?;
    let ups = upstreams();
    let file = "k3s-agent-load-balancer.json";
    write_agent_etc(
        data.path(),
        file,
        &k3s_load_balancer_json(&format!("https://{}", ups[0]), &ups),
    )?;
    let dir = data.path().to_str().context("utf-8")?;
    let lb = LocalListener::start(
        &lab.client,
        Some(&agent_cgroup),
        None,
        ("k3s-agent", "127.0.0.1:6444".parse()?),
        &["agent", "--data-dir", dir],
    )?;
    let _kubelet = FakeKubelet::start(
        &lab.client,
        &kubelet_cgroup,
        &kubeconfig("https://127.0.0.1:6444"),
    )?;
    let hop = format!(
        "kubelet -> 127.0.0.1:6444 (k3s, pid {}, systemd unit k3s-agent.service) -> [{}] from {dir}/agent/etc/{file}",
        lb.proc.pid(),
        listed(&ups)
    );
    assert_followed(&lab, &kubelet_cgroup, &hop, &ups)
}

/// Anyone may listen on 6443 first; a process outside a node component's cgroup names no
/// proxy, even when kubelet's connection reaches it, and check says what it found.
#[test]
fn a_listener_of_no_node_component_is_no_proxy() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let kubelet_cgroup = Cgroup::new()?;
    let other = Cgroup::new()?;
    let squatter = LocalListener::start(
        &lab.client,
        Some(&other),
        Some(65534),
        ("nginx", "127.0.0.1:6443".parse()?),
        &[],
    )?;
    let _kubelet = FakeKubelet::start(
        &lab.client,
        &kubelet_cgroup,
        &kubeconfig("https://127.0.0.1:6443"),
    )?;
    let row = wait_until(
        "check's refusal of the squatter",
        Duration::from_secs(10),
        Duration::from_millis(500),
        || {
            let row = check_row(&lab, &kubelet_cgroup)?;
            Ok(row
                .contains("refused the server of kubelet's connection")
                .then_some(row))
        },
    )?;
    assert!(row.contains(" warn "), "{row}");
    let want = format!(
        "no local proxy identified: refused the server of kubelet's connection to 127.0.0.1:6443 (pid {}, nginx, uid 65534): cgroup {} is neither a systemd unit's",
        squatter.proc.pid(),
        other
            .path()
            .strip_prefix(lifeline_tests::cgroup2_mount()?)?
            .display()
    );
    assert!(
        row.contains(&want.replace("cgroup ll", "cgroup /ll")),
        "want {want:?} in {row}"
    );
    Ok(())
}

/// The agent started before the proxy (a booting node: kubelet starts the static pod): the
/// loopback endpoint is looked at again every 5 s and the proxy followed once it listens.
#[test]
fn a_proxy_that_starts_after_the_agent_is_found() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let kubelet_cgroup = Cgroup::new()?;
    let _kubelet = FakeKubelet::start(
        &lab.client,
        &kubelet_cgroup,
        &kubeconfig("https://127.0.0.1:6443"),
    )?;
    let mut agent = Agent::start(&lab, &kubelet_cgroup)?;
    agent.wait_ready(READY)?;
    let warns = agent.messages("WARN");
    assert!(
        warns.iter().any(|m| m.contains(
            "no proxy is identified there: kubelet has no established connection to 127.0.0.1:6443 now"
        )),
        "{warns:#?}"
    );
    let ups = upstreams();
    let _api = api_server(&lab)?;
    let proxy = NodeProxy::start(&lab.client, ProxyKind::Haproxy, &ups)?;
    let hop = format!(
        "kubelet -> 127.0.0.1:6443 (haproxy, pid {}, systemd unit haproxy.service) -> [{}] from ",
        proxy.proc.pid(),
        listed(&ups)
    );
    let mut want: Vec<String> = ups.iter().map(|u| u.ip().to_string()).collect();
    want.sort();
    let st = wait_until(
        "the proxy found after start",
        Duration::from_secs(15),
        Duration::from_millis(200),
        || {
            let st = agent.status()?;
            let mut addrs: Vec<String> =
                st.endpoints.iter().flat_map(|e| e.addrs.clone()).collect();
            addrs.sort();
            let named = st
                .endpoint_source
                .as_deref()
                .is_some_and(|s| s.contains(&hop));
            Ok((addrs == want && named).then_some(st))
        },
    )?;
    let names: Vec<&str> = st.endpoints.iter().map(|e| e.endpoint.as_str()).collect();
    assert_eq!(names, ["haproxy-upstreams:6443"]);
    let infos = agent.messages("INFO");
    assert!(
        infos.iter().any(|m| m.contains(&hop)
            && m.contains("the endpoint is now the proxy's upstreams on port 6443")),
        "{infos:#?}"
    );
    Ok(())
}
