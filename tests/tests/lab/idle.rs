//! Idle connections: keepalive armed by the probe finds a dead peer behind a
//! connection nobody talks to, and touches nothing else.
//! (a) an idle long-poll black-holed is killed as "silent" and the client re-dials, within
//!     8 s with fast probes (their octets counted), after 11 s without them (before 5.15);
//! (b) a healthy idle connection is left alone for 3 minutes, at one probe per idle period;
//! (c) an application's own stricter keepalive is kept, looser ones are lowered, also when
//!     set after connect as Go's dialer does (and `--user-timeout` arms `TCP_USER_TIMEOUT`);
//!     before Linux 6.1, which cannot read the values from BPF, lifeline's are set unread
//!     over values made before connecting, and status says so;
//! (d) after SIGKILL the sockets keep working and a new agent adopts them without re-arming.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::keepalive::{attached_programs, latest};
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::idle_lab::{
    LIFELINE, SERVER, agent_with, go_like_client, silent_kill_after_flow_blackhole, wait_armed,
};
use lifeline_tests::scenarios::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::{Client, Lab, assertions::ss, mono_ms, require_root, wait_until};

#[test]
fn idle_long_poll_blackholed_is_killed_as_silent() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    // Defaults: the kernel's own keepalive abort (1 + 20 x 1 = 21 s, ETIMEDOUT) comes well
    // after lifeline's silent rule (12 probes unanswered, 1 + 12 x 1 = 13 s), so the kill
    // is provably ours.
    let agent = agent_with(&s, &[])?;
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
    wait_armed(&agent, port, "1s,1s,20")?;
    let after = silent_kill_after_flow_blackhole(&s, &agent, &client)?;
    kernel::report(
        &features::KEEPALIVE_SET,
        &format!("idle socket armed, killed as silent {after} ms after the black hole"),
    );
    // The helper asserted the cadence this kernel should give (fast: <= 8 s, octet probes).
    kernel::report(
        &features::FAST_PROBES,
        &format!("12 unanswered probes, killed as silent {after} ms after the black hole"),
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
    wait_armed(&agent, port, "1s,1s,20")?;
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
    // at most one exchange per idle period (1 s), and at least most of them happened.
    let periods = elapsed_s;
    ensure!(
        probes <= periods + 1 && replies <= periods + 1,
        "too much keepalive traffic: {probes}/{replies} in {elapsed_s} s"
    );
    ensure!(
        probes + 5 >= periods,
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
    // Before connecting: stricter than lifeline's 1s,1s,20 (it gives up after 1 s x 5),
    // looser in every value, none at all. After connecting, as Go's dialer does: kubelet's
    // 30,30,9, and a stricter 1,1,5 (the setsockopt hook merges both on every kernel).
    let after = |ka: &str| go_like_client(&s, ka, &["--sockopts-every", "500ms", "idle"]);
    let (strict, loose, none) = (start(Some("1,1,5"))?, start(Some("60,30,9"))?, start(None)?);
    let (go, go_strict) = (after("30,30,9")?, after("1,1,5")?);
    // Without reading (Linux < 6.1) lifeline's values are set over the app's stricter ones
    // made before connecting; those made after connecting always count.
    let reads = kernel::has(&features::KEEPALIVE_READ);
    let kept = if reads { (1, 1, 5) } else { LIFELINE };
    for (client, want, label) in [
        (&strict, kept, "app's, stricter"),
        (&loose, LIFELINE, "lowered"),
        (&none, LIFELINE, "armed"),
        (&go, LIFELINE, "go dialer"),
        (&go_strict, (1, 1, 5), "app's, stricter, after connect"),
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
            ka.contains("app's") == (reads && label.starts_with("app's")),
            "{label}: status says {ka:?}"
        );
        ensure!(
            ka.contains("set without reading") != reads,
            "{label}: status says {ka:?}"
        );
        if label == "go dialer" {
            let seen = format!("Go's 30,30,9 after connect -> client reads {want:?}");
            kernel::report(&features::APP_KEEPALIVE, &seen);
        }
        if label == "app's, stricter" {
            let seen = format!("app's 1,1,5 -> client reads {want:?}; KEEPALIVE `{ka}`");
            kernel::report(&features::KEEPALIVE_READ, &seen);
        }
    }
    Ok(())
}

#[test]
fn sigkilled_agent_leaves_working_sockets_and_a_new_one_adopts_them_once() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    // Each agent mounts a bpffs of its own (the `Agent` fixture's empty /sys/fs/bpf): the
    // first's crash-recovery pin does not reach the second, as in a pod without the host's
    // bpffs (the restore module tests the recovery), whatever the host has mounted there.
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
        wait_armed(&first, p, "1s,1s,20")?;
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
        opts.keepalive && opts.values() == LIFELINE,
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
        wait_armed(&second, p, "1s,1s,20")?;
    }
    let st = second.status()?;
    for p in ports {
        let rows = st.sockets_for_port(p);
        ensure!(rows.len() == 1, "port {p} listed {} times", rows.len());
        ensure!(
            rows[0].source == "adopted" && rows[0].keepalive == "1s,1s,20",
            "{:?}",
            rows[0].raw
        );
    }
    let opts = latest(&idle).context("no sockopts")?;
    ensure!(opts.values() == LIFELINE, "re-armed differently: {opts:?}");
    // And it really watches them again: the heartbeat connection's black hole is healed.
    blackhole_until_killed(&s, &second, &hb, Duration::from_secs(4))?;
    Ok(())
}
