//! The endpoint comes from the real kubelet only: a root process in kubelet's cgroup (the
//! agent's cgroup target here). A process named `kubelet` run by another user, or outside
//! that cgroup, is ignored and logged once, however old it is. And when kubelet restarts
//! with another `--kubeconfig`, the followed endpoint moves to its server at run time.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::fixtures::fake_kubelet::kubeconfig;
use lifeline_tests::infra::api_addrs::DNS_V4;
use lifeline_tests::scenarios::endpoint_scenario::watched_on;
use lifeline_tests::{
    Agent, AgentArgs, ApiLab, FakeKubelet, Status, api, require_root, wait_until,
};

const READY: Duration = Duration::from_mins(1);

fn endpoints(st: &Status) -> Vec<&str> {
    st.endpoints.iter().map(|e| e.endpoint.as_str()).collect()
}

/// The agent, told the lab's DNS server (for a name a kubeconfig may hold).
fn agent(l: &ApiLab) -> Result<Agent> {
    let args = AgentArgs {
        extra: vec!["--dns-server".into(), DNS_V4.to_string()],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&l.lab, &l.cgroup, &args)?;
    agent.wait_ready(READY)?;
    Ok(agent)
}

/// (c) Two older impostors, each naming an endpoint of its own: one as uid 65534 inside
/// kubelet's cgroup, one as root outside it. The real kubelet's server is followed, its
/// client's connection is the endpoint's, and each impostor is one warning naming its pid,
/// its uid and why, also after several re-discovery rounds.
#[test]
fn only_a_root_kubelet_in_kubelets_cgroup_chooses_the_endpoint() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let ns = &l.lab.client;
    let nobody = FakeKubelet::start_as(
        ns,
        Some(&l.cgroup),
        Some(65534),
        &kubeconfig("https://203.0.113.66:6443"),
    )?;
    std::thread::sleep(Duration::from_millis(50)); // start times count in 10 ms ticks
    let outside = FakeKubelet::start_as(ns, None, None, &kubeconfig("https://203.0.113.67:6443"))?;
    std::thread::sleep(Duration::from_millis(50));
    let real = FakeKubelet::start(ns, &l.cgroup, &kubeconfig("https://198.51.100.2:6443"))?;
    let agent = agent(&l)?;

    let c = l.kube_client(&[])?;
    let conn = watched_on(&agent, &c, api(1, false), "ok")?;
    let st = agent.status()?;
    eprintln!("status: {:?} from {:?}", st.endpoints, st.endpoint_source);
    assert_eq!(endpoints(&st), ["198.51.100.2:6443"]);
    assert_eq!(st.endpoint_source, Some(real.source()));
    let member = st
        .socket_for_port(conn.local_port)
        .and_then(|s| s.endpoint_member.clone());
    assert_eq!(
        member.as_deref(),
        Some("in-set"),
        "the client's connection is the endpoint's"
    );

    // Re-discovery looks every 3 s: two more rounds must not log them again.
    std::thread::sleep(Duration::from_secs(7));
    let warns = agent.messages("WARN");
    for (fake, why) in [
        (&nobody, "runs as uid 65534 (effective 65534), not root"),
        (&outside, "is not kubelet's"),
    ] {
        let head = format!("ignoring process {} named kubelet (uid ", fake.proc.pid());
        let lines: Vec<&String> = warns.iter().filter(|m| m.starts_with(&head)).collect();
        eprintln!("{lines:#?}");
        ensure!(
            lines.len() == 1,
            "want one line for pid {}: {warns:#?}",
            fake.proc.pid()
        );
        ensure!(lines[0].contains(why), "{}", lines[0]);
    }
    ensure!(
        warns.iter().any(|m| m.contains("(uid 65534/65534, cgroup")),
        "{warns:#?}"
    );
    ensure!(
        agent
            .endpoint_events()
            .iter()
            .all(|e| !e.addrs.iter().any(|a| a.starts_with("203.0.113.6"))),
        "an impostor's endpoint was followed"
    );
    Ok(())
}

/// Kubelet restarted with another `--kubeconfig` (here naming the API by a name that
/// resolves to two hosts): status shows the new endpoint, its set and its source, one line
/// says so, and the client's connection stays the endpoint's.
#[test]
fn a_kubelet_restarted_with_another_kubeconfig_moves_the_endpoint() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false), api(3, false)])?;
    let first = FakeKubelet::start(
        &l.lab.client,
        &l.cgroup,
        &kubeconfig("https://198.51.100.2:6443"),
    )?;
    let first_source = first.source();
    let agent = agent(&l)?;
    let c = l.kube_client(&[])?;
    let conn = watched_on(&agent, &c, api(1, false), "ok")?;
    let st = agent.status()?;
    assert_eq!(endpoints(&st), ["198.51.100.2:6443"]);
    assert_eq!(st.endpoint_source.as_deref(), Some(first_source.as_str()));

    drop(first); // killed: the unit stops ...
    let second = FakeKubelet::start(
        &l.lab.client,
        &l.cgroup,
        &kubeconfig("https://api.lab.test:6443"),
    )?;
    let restart_ms = lifeline_tests::mono_ms();
    let want_addrs = [api(1, false).to_string(), api(3, false).to_string()];
    let st = wait_until(
        "the new endpoint in status",
        Duration::from_secs(15),
        Duration::from_millis(200),
        || {
            // Retargeted but not yet resolved, the endpoint has no refresh age, which the
            // lab's typed status does not take: not there yet.
            let Ok(st) = agent.status() else {
                return Ok(None);
            };
            let moved = endpoints(&st) == ["api.lab.test:6443"]
                && st.endpoints[0].addrs == want_addrs
                && st.endpoint_source.as_deref() == Some(second.source().as_str());
            Ok(moved.then_some(st))
        },
    )
    .with_context(|| agent.proc.stderr_text())?;
    eprintln!(
        "moved {} ms after the restart: {:?}",
        lifeline_tests::mono_ms() - restart_ms,
        st.endpoints
    );
    let member = st
        .socket_for_port(conn.local_port)
        .and_then(|s| s.endpoint_member.clone());
    assert_eq!(member.as_deref(), Some("in-set"));
    let line = format!(
        "API endpoint api.lab.test:6443 from {}: kubelet restarted with another kubeconfig (was 198.51.100.2:6443 from {first_source})",
        second.source()
    );
    let infos = agent.messages("INFO");
    // The line goes on to say what follows from the move (a new port watched).
    ensure!(
        infos.iter().any(|m| m.starts_with(&line)),
        "no line {line:?}: {infos:#?}"
    );
    Ok(())
}
