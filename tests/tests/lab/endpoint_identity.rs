//! Which sockets are the API endpoint's: only those whose peer's address was in the
//! endpoint's answers when they connected, when lifeline adopted them, or since. A socket
//! of the same cgroup to another service on the endpoint's port is watched, judged by stall
//! and silence, and never by DNS: never orphaned, never peer-probed, never killed for it.
//! (a) five minutes of a heartbeat and an idle connection to another service on 6443 from
//!     the target cgroup, with a short grace and spread (the old port-only rule orphaned
//!     them within seconds), while the real endpoint connection is black-holed, killed and
//!     re-dialled as before;
//! (b) a connection older than the agent to that service: adopted, watched, no orphan
//!     decision over several grace periods; `lifeline check` names its peer.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::assertions::watched::wait_watched;
use lifeline_tests::fixtures::outside::{
    Outside, assert_endpoints, assert_outside, decisions_about, never_held_lines, ports_to_outside,
    probes_of,
};
use lifeline_tests::scenarios::endpoint_scenario::{
    agent_resolved, back_on, check_kill, wait_kill,
};
use lifeline_tests::{ApiLab, Client, api, require_root};

/// How long (a) keeps the other service's connections under the agent's eyes.
const WINDOW: Duration = Duration::from_mins(5);
/// Short enough that the port-only rule would orphan and migrate within seconds.
const FAST_ORPHANS: [&str; 4] = ["--orphan-grace", "5s", "--migrate-spread", "2s"];

/// Nothing was decided about `ports`, and the other service's client saw no error.
fn untouched(agent: &lifeline_tests::Agent, other: &Client, ports: &[u16]) -> Result<()> {
    let about = decisions_about(agent, ports);
    ensure!(
        about.is_empty(),
        "a decision about the other service's sockets: {about:?}"
    );
    let errors = other.errors();
    ensure!(
        errors.is_empty(),
        "the other service's client broke: {errors:?}"
    );
    Ok(())
}

#[test]
fn another_service_on_the_endpoint_port_is_never_judged_by_dns() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let outside = Outside::start(&l.lab)?;
    let args = ApiLab::agent_args(Some("4s"), &FAST_ORPHANS);
    let agent = agent_resolved(&l, &args, &[api(1, false)])?;

    let kube = l.kube_client(&[])?;
    let peer = Outside::addr().to_string();
    let other = Client::start(
        &l.lab,
        Some(&l.cgroup),
        &[
            "--peer",
            &peer,
            "--hold",
            &peer,
            "heartbeat",
            "--interval",
            "5s",
        ],
    )?;
    let started = Instant::now();
    let kube_port = kube.local_port().context("kube-client never connected")?;
    let ports = lifeline_tests::wait_until(
        "both connections to the other service",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || Ok(Some(ports_to_outside(&other)).filter(|p| p.len() == 2)),
    )?;
    // Watched first: listed by the agent, from the target cgroup.
    assert_endpoints(&wait_watched(&agent, kube_port, Duration::from_secs(10))?)?;
    for p in &ports {
        let s = wait_watched(&agent, *p, Duration::from_secs(10))?;
        ensure!(s.watched_by == ["cgroup"], "{}", s.raw);
        assert_outside(&s)?;
    }
    let table = agent.status_table()?;
    ensure!(
        table.contains(" outside ")
            && table.contains("outside: 2 socket(s) on api.lab.test:6443's port")
            && table.contains(&peer),
        "the table does not say which sockets are not the endpoint's:\n{table}"
    );

    // A black hole on the real endpoint connection, a third into the window: killed as
    // before, and its re-dial works, while the other service's sockets stay untouched.
    let mut black_holed = false;
    while started.elapsed() < WINDOW {
        untouched(&agent, &other, &ports)?;
        if !black_holed && started.elapsed() >= WINDOW / 3 {
            black_holed = true;
            let _fault = l.lab.blackhole_flow(kube_port)?;
            let old = kube.current().context("kube-client has no connection")?;
            let kill = wait_kill(&agent, kube_port, Duration::from_secs(30))?;
            check_kill(&kill, "stalled")?;
            let now = back_on(&kube, &old, api(1, false), "ok", Duration::from_secs(15))?;
            assert_endpoints(&wait_watched(
                &agent,
                now.local_port,
                Duration::from_secs(10),
            )?)?;
            eprintln!("endpoint connection killed and re-dialled: {}", kill.raw);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    untouched(&agent, &other, &ports)?;
    for p in &ports {
        ensure!(
            lifeline_tests::assertions::ss::find(&l.lab.client, *p, Outside::addr())?.is_some(),
            "the connection from port {p} is gone:\n{}",
            lifeline_tests::assertions::ss::dump(&l.lab.client)
        );
        assert_outside(&wait_watched(&agent, *p, Duration::from_secs(5))?)?;
    }
    let beats = other
        .events()
        .iter()
        .filter(|e| e.event == "ok" && e.local_port == Some(ports[0]))
        .count();
    ensure!(
        beats >= 55,
        "only {beats} heartbeats in 5 minutes: {}",
        other.dump()
    );
    ensure!(
        probes_of(&agent, Outside::addr().ip()) == 0,
        "the other service was peer-probed as an endpoint address"
    );
    let lines = never_held_lines(&agent, Outside::addr());
    ensure!(
        lines.len() == 1,
        "want one never-held line for {peer}, got {lines:?}"
    );
    drop(outside);
    Ok(())
}

/// `lifeline check` in the lab's client namespace, following the lab's endpoint.
fn check(l: &ApiLab) -> Result<String> {
    let dns = lifeline_tests::infra::api_addrs::DNS_V4.to_string();
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", l.lab.client.path()))
        .args(["--", "unshare", "--mount", "--propagation", "private"])
        .arg(lifeline_tests::infra::paths::lifeline()?)
        .args(["check", "--endpoint", lifeline_tests::ENDPOINT])
        .args(["--dns-server", &dns, "--ports", "6443", "--cgroup"])
        .arg(l.cgroup.path());
    let out = lifeline_tests::infra::cmd::output(&mut cmd)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_preexisting_connection_outside_the_set_is_never_orphaned() -> Result<()> {
    const GRACE: Duration = Duration::from_secs(3);
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let outside = Outside::start(&l.lab)?;
    let peer = Outside::addr().to_string();
    // Both older than the agent: one to the endpoint, one to the other service.
    let kube = l.kube_client(&[])?;
    let other = Client::start(&l.lab, Some(&l.cgroup), &["--peer", &peer, "idle"])?;
    let port = other.local_port().context("no local port")?;
    let kube_port = kube.local_port().context("kube-client never connected")?;

    let args = ApiLab::agent_args(None, &["--orphan-grace", "3s", "--migrate-spread", "1s"]);
    let agent = agent_resolved(&l, &args, &[api(1, false)])?;
    let s = wait_watched(&agent, port, Duration::from_secs(10))?;
    ensure!(s.source == "adopted", "not adopted: {}", s.raw);
    assert_outside(&s)?;
    // The endpoint's own pre-existing connection is its, once the first answer holds it.
    lifeline_tests::wait_until(
        "the adopted endpoint connection as the endpoint's",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            Ok(wait_watched(&agent, kube_port, Duration::from_secs(5))
                .ok()
                .filter(|s| assert_endpoints(s).is_ok()))
        },
    )?;

    let table = check(&l)?;
    let row = table
        .lines()
        .find(|l| l.starts_with("endpoint peers"))
        .with_context(|| format!("no endpoint peers row:\n{table}"))?;
    ensure!(
        row.split_whitespace().nth(2) == Some("warn") && row.contains(&peer),
        "check does not name the peer outside the answer: {row}"
    );

    // Several grace periods (and spreads): no decision, still established.
    let until = Instant::now() + GRACE * 6;
    while Instant::now() < until {
        untouched(&agent, &other, &[port])?;
        std::thread::sleep(Duration::from_millis(500));
    }
    ensure!(
        lifeline_tests::assertions::ss::find(&l.lab.client, port, Outside::addr())?.is_some(),
        "the pre-existing connection is gone:\n{}",
        lifeline_tests::assertions::ss::dump(&l.lab.client)
    );
    assert_outside(&wait_watched(&agent, port, Duration::from_secs(5))?)?;
    ensure!(
        never_held_lines(&agent, Outside::addr()).len() == 1,
        "want one never-held line: {}",
        agent.proc.stderr_text()
    );
    drop(outside);
    Ok(())
}
