//! Issue "idle connections": keepalive armed by the probe finds a dead peer behind a
//! connection nobody talks to, and touches nothing else.
//! (a) an idle long-poll black-holed is killed as "silent" and the client re-dials;
//! (b) a healthy idle connection is left alone for 3 minutes, at one probe per idle period;
//! (c) an application's own stricter keepalive is kept, looser ones are lowered (and
//!     `--user-timeout` arms `TCP_USER_TIMEOUT`); before Linux 6.1, which cannot read the
//!     values from BPF, lifeline's are set unread and status says so;
//! (d) after SIGKILL the sockets keep working and a new agent adopts them without re-arming.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::keepalive::{attached_programs, latest};
use lifeline_tests::kernel::{self, features};
use lifeline_tests::scenario::{ECONNABORTED, Setup, blackhole_until_killed};
use lifeline_tests::{Agent, AgentArgs, Client, Lab, mono_ms, require_root, ss, wait_until};

const SERVER: &str = "198.51.100.2:6443";

fn agent_with(s: &Setup, extra: &[&str]) -> Result<Agent> {
    let args = AgentArgs {
        extra: extra.iter().map(|a| (*a).to_owned()).collect(),
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    Ok(agent)
}

/// Waits until `status` lists the client's socket with keepalive armed as `want`.
fn wait_armed(agent: &Agent, port: u16, want: &str) -> Result<()> {
    wait_until(
        "the socket armed in lifeline status",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            let st = agent.status()?;
            Ok(st
                .socket_for_port(port)
                .filter(|k| k.keepalive.starts_with(want))
                .map(|_| ()))
        },
    )
    .with_context(|| format!("status: {}", agent.status_table().unwrap_or_default()))
}

#[test]
fn idle_long_poll_blackholed_is_killed_as_silent() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    // COUNT 5: the kernel's own keepalive abort (10 + 5 x 3 = 25 s, ETIMEDOUT) comes well
    // after lifeline's silent timeout (10 + 2 x 3 = 16 s), so the kill is provably ours.
    let agent = agent_with(&s, &["--keepalive", "10s,3s,5"])?;
    let args = ["--peer", SERVER, "watch", "--every", "60", "--redial"];
    let client = Client::start(&s.lab, Some(&s.cgroup), &args)?;
    let port = client.local_port().context("no local port")?;
    client.wait_event("the first event", Duration::from_secs(10), |e| {
        e.event == "ok"
    })?;
    if !kernel::has(&features::KEEPALIVE_SET) {
        // Nothing to find an idle peer with: the documented degradation, then done.
        wait_armed(&agent, port, "not armed: kernel refused")?;
        let st = agent.status()?;
        let ka = &st.socket_for_port(port).context("socket gone")?.keepalive;
        kernel::report(&features::KEEPALIVE_SET, &format!("KEEPALIVE `{ka}`"));
        return Ok(());
    }
    wait_armed(&agent, port, "10s,3s,5")?;

    let fault = s.lab.blackhole_flow(port)?;
    let fault_ms = mono_ms();
    let budget = Duration::from_secs(10 + 3 * 3 + 3);
    let decision = wait_until(
        "a kill decision",
        budget + Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            Ok(agent
                .decisions()
                .into_iter()
                .find(|d| d.is_for_port(port) && d.action == "kill"))
        },
    )
    .with_context(|| format!("lifeline's stderr:\n{}", agent.proc.stderr_text()))?;
    let after = decision.at_ms - fault_ms;
    eprintln!("killed {after} ms after the black hole: {}", decision.raw);
    ensure!(
        u128::from(after) <= budget.as_millis(),
        "killed {after} ms after the fault; budget {budget:?}"
    );
    ensure!(
        decision.verdict == "silent" && decision.outcome == "killed",
        "{}",
        decision.raw
    );
    ensure!(
        decision.unacked_bytes == Some(0),
        "an idle socket has nothing unacked: {}",
        decision.raw
    );

    let err = client.wait_event("the client's error", Duration::from_secs(5), |e| {
        e.event == "error"
    })?;
    ensure!(
        err.errno == Some(ECONNABORTED),
        "not ECONNABORTED: {}",
        err.raw
    );
    // The flow-only black hole spares new connections: the re-dialed stream works.
    let redial = client.wait_event("the re-dial", Duration::from_secs(10), |e| {
        e.event == "redialed"
    })?;
    client.wait_event(
        "an event on the new connection",
        Duration::from_secs(10),
        |e| e.event == "ok" && e.mono_ms >= redial.mono_ms,
    )?;
    let (_, dropped) = s.lab.counters(&fault)?;
    ensure!(
        dropped > 0,
        "the black hole dropped nothing (no keepalive probe?)"
    );
    kernel::report(
        &features::KEEPALIVE_SET,
        &format!("idle socket armed, killed as silent {after} ms after the black hole"),
    );
    Ok(())
}

#[test]
fn healthy_idle_connection_is_left_alone_for_three_minutes() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let agent = agent_with(&s, &[])?;
    let client = Client::start(&s.lab, Some(&s.cgroup), &["--peer", SERVER, "idle"])?;
    let port = client.local_port().context("no local port")?;
    wait_armed(&agent, port, "10s,3s,3")?;
    let counter = s.lab.count_flow(port)?;
    let (start, window) = (mono_ms(), Duration::from_mins(3));
    std::thread::sleep(window);
    let elapsed_s = (mono_ms() - start) / 1000;

    ensure!(
        agent.decisions().is_empty(),
        "decisions: {:?}",
        agent.decisions()
    );
    ensure!(client.errors().is_empty(), "client: {}", client.dump());
    ensure!(
        ss::find(&s.lab.client, port, Lab::server_addr(false))?.is_some(),
        "the idle socket is gone:\n{}",
        ss::dump(&s.lab.client)
    );
    let counts = s.lab.rule_counts(&counter)?;
    let (probes, replies) = (counts[0][0], counts[1][0]);
    eprintln!("{elapsed_s} s idle: {probes} keepalive probes, {replies} replies");
    // Nothing else crosses an idle connection, so every packet is a probe or its answer:
    // at most one exchange per idle period (10 s), and at least most of them happened.
    let periods = elapsed_s / 10;
    ensure!(
        probes <= periods + 1 && replies <= periods + 1,
        "too much keepalive traffic: {probes}/{replies} in {elapsed_s} s"
    );
    ensure!(
        probes + 3 >= periods,
        "keepalive not armed? {probes} probes in {elapsed_s} s"
    );
    Ok(())
}

#[test]
fn application_keepalive_is_never_loosened() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    // --user-timeout too: the kernel's own bound on unacknowledged data, set the same way.
    let agent = agent_with(&s, &["--user-timeout", "30s"])?;
    let start = |app: Option<&str>| {
        let mut args = vec!["--peer", SERVER, "--sockopts-every", "500ms"];
        if let Some(ka) = app {
            args.extend(["--keepalive", ka]);
        }
        args.push("idle");
        Client::start(&s.lab, Some(&s.cgroup), &args)
    };
    // Stricter than lifeline's 10s,3s,3 in every value; looser in every value; none at all.
    let (strict, loose, none) = (start(Some("5,2,2"))?, start(Some("60,30,9"))?, start(None)?);
    // Without reading (Linux < 6.1) lifeline's values are set over the app's stricter ones.
    let reads = kernel::has(&features::KEEPALIVE_READ);
    let kept = if reads { (5, 2, 2) } else { (10, 3, 3) };
    for (client, want, label) in [
        (&strict, kept, "app's, stricter"),
        (&loose, (10, 3, 3), "lowered"),
        (&none, (10, 3, 3), "armed"),
    ] {
        let port = client.local_port().context("no local port")?;
        wait_armed(&agent, port, &format!("{}s,{}s,{}", want.0, want.1, want.2))?;
        // The client's own getsockopt, read after the agent armed the socket.
        let since = mono_ms();
        let opts = wait_until(
            "a fresh sockopts report",
            Duration::from_secs(5),
            Duration::from_millis(100),
            || Ok(latest(client).filter(|o| o.mono_ms > since)),
        )?;
        ensure!(
            opts.keepalive && opts.values() == want,
            "{label}: client reads {opts:?}, want {want:?}"
        );
        ensure!(
            opts.user_timeout_ms == 30_000,
            "{label}: TCP_USER_TIMEOUT not armed: {opts:?}"
        );
        let st = agent.status()?;
        let ka = &st
            .socket_for_port(port)
            .context("socket missing from status")?
            .keepalive;
        ensure!(
            ka.contains("app's") == (reads && label == "app's, stricter"),
            "{label}: status says {ka:?}"
        );
        ensure!(
            ka.contains("set without reading") != reads,
            "{label}: status says {ka:?}"
        );
        if label == "app's, stricter" {
            let seen = format!("app's 5,2,2 -> client reads {want:?}; KEEPALIVE `{ka}`");
            kernel::report(&features::KEEPALIVE_READ, &seen);
        }
    }
    Ok(())
}

#[test]
fn sigkilled_agent_leaves_working_sockets_and_a_new_one_adopts_them_once() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let mut first = agent_with(&s, &[])?;
    let hb = s.heartbeat_client(&[])?;
    let idle = Client::start(
        &s.lab,
        Some(&s.cgroup),
        &["--peer", SERVER, "--sockopts-every", "500ms", "idle"],
    )?;
    let ports = [
        hb.local_port().context("port")?,
        idle.local_port().context("port")?,
    ];
    for p in ports {
        wait_armed(&first, p, "10s,3s,3")?;
    }
    first.proc.kill();
    let killed_ms = mono_ms();
    ensure!(
        attached_programs(s.cgroup.path())? == 0,
        "programs still attached after SIGKILL"
    );
    std::thread::sleep(Duration::from_secs(3));
    ensure!(
        hb.errors().is_empty() && idle.errors().is_empty(),
        "{}\n{}",
        hb.dump(),
        idle.dump()
    );
    ensure!(
        hb.events()
            .iter()
            .any(|e| e.event == "ok" && e.mono_ms > killed_ms + 1000),
        "heartbeats stopped: {}",
        hb.dump()
    );
    let opts = latest(&idle).context("no sockopts")?;
    ensure!(
        opts.keepalive && opts.values() == (10, 3, 3),
        "keepalive changed after SIGKILL: {opts:?}"
    );

    let second = agent_with(&s, &[])?;
    let adopted = second
        .log()
        .into_iter()
        .find_map(|(_, v)| {
            let f = v.get("fields")?;
            (f.get("message")?.as_str()? == "pre-existing sockets adopted").then(|| f.clone())
        })
        .context("no adoption log line")?;
    eprintln!("second agent: {adopted}");
    ensure!(
        adopted["already_armed"] == 2 && adopted["armed"] == 2,
        "{adopted}"
    );
    for p in ports {
        wait_armed(&second, p, "10s,3s,3")?;
    }
    let st = second.status()?;
    for p in ports {
        let rows = st.sockets_for_port(p);
        ensure!(rows.len() == 1, "port {p} listed {} times", rows.len());
        ensure!(
            rows[0].source == "adopted" && rows[0].keepalive == "10s,3s,3",
            "{:?}",
            rows[0].raw
        );
    }
    let opts = latest(&idle).context("no sockopts")?;
    ensure!(
        opts.values() == (10, 3, 3),
        "re-armed differently: {opts:?}"
    );
    // And it really watches them again: the heartbeat connection's black hole is healed.
    blackhole_until_killed(&s, &second, &hb, Duration::from_secs(4))?;
    Ok(())
}
