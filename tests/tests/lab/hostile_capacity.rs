//! Hostile neighbour (c): an unprivileged user (uid 65534, `lab-flood`) in the node's network
//! namespace floods the probe: refused connects to 127.0.0.1 on the watched port from two
//! threads, as fast as they go, and Go's keepalive `setsockopt` calls in a loop on 32
//! connections of its own to the endpoint's address (sockets watched only for their peer),
//! while the target (the lab client in the target cgroup) dials. Its handshake is held open
//! about 4 s (its first SYNs dropped), so its owner entry waits in the kernel through about
//! 100,000 of the flood's connects: with one LRU for every connect (before), the entry was
//! evicted and the target's connection never watched. The target's connection is watched from its connect,
//! a black hole on it is killed within the usual time, the skipped connects are counted, the
//! flood's surplus endpoint sockets are refused by their quota (and said so), no news is lost,
//! and the agent's memory stays bounded.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::assertions::watched::{
    assert_watched_from_start, blackhole_is_killed, wait_watched,
};
use lifeline_tests::fixtures::hostile::{rss_kib, syn_hold};
use lifeline_tests::infra::paths::fixture;
use lifeline_tests::scenarios::scenario::{ECONNABORTED, Setup};
use lifeline_tests::{
    Agent, AgentArgs, Client, Lab, Proc, SERVER_PORT, SERVER_V4, mono_ms, require_root,
};

const STALL: Duration = Duration::from_secs(4);
/// `--max-sockets`: endpoint clients may hold a quarter of it (`endpoint_quota`).
const MAX_SOCKETS: u64 = 64;
const QUOTA: u64 = MAX_SOCKETS / 4;
/// The flood's own connections to the endpoint: twice its quota.
const HOLDS: u64 = 2 * QUOTA;
const FLOOD_S: u64 = 25;
/// Growth of the agent's resident memory allowed over the flood (generous: the point is
/// "bounded", a debug build's allocator noise is a few MiB).
const RSS_GROWTH_KIB: u64 = 16 * 1024;

#[test]
fn a_flood_of_connects_and_setsockopt_does_not_crowd_out_the_target() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let endpoint = Lab::server_addr(false).to_string();
    let args = AgentArgs {
        extra: vec![
            "--endpoint-clients".into(),
            "--endpoint".into(),
            endpoint.clone(),
            "--max-sockets".into(),
            MAX_SOCKETS.to_string(),
        ],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let before = agent.swept_status()?.capacity;
    let pid = agent.proc.pid();
    let rss_before = rss_kib(pid)?;

    let mut flood = start_flood(&s, &endpoint)?;
    let client = dial_held_open(&s)?;
    let port = client.local_port().context("the client's local port")?;
    let sock = wait_watched(&agent, port, Duration::from_secs(10))?;
    assert_watched_from_start(&sock, u64::from(client.proc.pid()))?;
    ensure!(
        sock.watched_by.iter().any(|w| w == "cgroup"),
        "{}",
        sock.raw
    );
    flood_sockets_hold_their_quota(&agent, flood.pid())?;

    ensure!(
        flood.try_status().is_none(),
        "the flood ended before the black hole"
    );
    black_hole_is_killed_in_time(&s, &agent, &client, port)?;
    ensure!(
        flood.try_status().is_none(),
        "the flood ended before the kill"
    );

    let done = FloodDone::wait(&mut flood)?;
    // Every refused connect was skipped in the kernel; the next sweep publishes the count.
    let after = lifeline_tests::wait_until(
        "the skipped connects in status",
        Duration::from_secs(5),
        Duration::from_millis(200),
        || {
            let c = agent.status()?.capacity;
            Ok((c.owners_skipped - before.owners_skipped >= done.refused).then_some(c))
        },
    )?;
    let rss_after = rss_kib(pid)?;
    eprintln!(
        "capacity before {before:?}\ncapacity after {after:?}\nagent RSS {rss_before} KiB before, {rss_after} KiB after"
    );
    ensure!(
        after.news_lost == 0 && after.inbox_dropped == 0 && after.sockets_full == 0,
        "news lost or sockets unwatched: {after:?}"
    );
    ensure!(
        rss_after <= rss_before + RSS_GROWTH_KIB,
        "the agent's memory grew from {rss_before} to {rss_after} KiB over the flood"
    );
    let table = agent.status_table()?;
    ensure!(
        table.contains("\nskipped connects: ")
            // At least the flood's surplus; the agent's own peer probes to the endpoint,
            // made after the black hole, count too.
            && table.contains(&format!(
                "WARNING: {} socket(s) watched only for their peer NOT watched",
                after.endpoint_quota_full
            )),
        "{table}"
    );
    check_warns(&s, &agent)
}

/// `lab-flood` as uid 65534 in the agent's namespace, started and flooding.
fn start_flood(s: &Setup, endpoint: &str) -> Result<Proc> {
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", s.lab.client.path()))
        .arg("--")
        .arg(fixture("lab-flood")?)
        .args(["--refuse", &format!("127.0.0.1:{SERVER_PORT}")])
        .args(["--hold", endpoint, "--holds", &HOLDS.to_string()])
        .args(["--threads", "2", "--seconds", &FLOOD_S.to_string()]);
    let mut flood = Proc::spawn("lab-flood", cmd)?;
    flood.wait_stdout("the flood to start", Duration::from_secs(20), |l| {
        l == "ready"
    })?;
    Ok(flood)
}

/// The target dials in the middle of the flood, its handshake held open (`syn_hold`).
fn dial_held_open(s: &Setup) -> Result<Client> {
    let syns = s.lab.drop_syns(SERVER_V4)?;
    let dialled = Instant::now();
    let (client, dropped_syns) = std::thread::scope(|sc| -> Result<_> {
        let healer = sc.spawn(|| {
            std::thread::sleep(syn_hold());
            let (_, dropped) = s.lab.counters(&syns)?;
            s.lab.heal(&syns).map(|()| dropped)
        });
        let client = s.heartbeat_client(&[]);
        let dropped = healer.join().expect("the healer thread")?;
        Ok((client?, dropped))
    })?;
    let handshake = dialled.elapsed();
    eprintln!("the target connected {handshake:?} after dialling ({dropped_syns} SYN(s) dropped)");
    ensure!(
        dropped_syns > 0,
        "no SYN was held back: the handshake was not slow"
    );
    Ok(client)
}

/// The flood's own endpoint sockets: exactly their quota is watched, the rest counted.
fn flood_sockets_hold_their_quota(agent: &Agent, flooder: u32) -> Result<()> {
    let st = agent.status()?;
    let theirs: Vec<_> = st
        .sockets
        .iter()
        .filter(|k| k.owner_pid == Some(u64::from(flooder)))
        .collect();
    for k in &theirs {
        ensure!(k.watched_by == ["endpoint"], "{}", k.raw);
    }
    ensure!(
        theirs.len() as u64 == QUOTA && st.capacity.endpoint_quota_full == HOLDS - QUOTA,
        "{} of the flood's {HOLDS} endpoint sockets watched, {} refused by the quota (want {QUOTA} and {})",
        theirs.len(),
        st.capacity.endpoint_quota_full,
        HOLDS - QUOTA
    );
    Ok(())
}

/// The target's flow only: the endpoint stays healthy for the guard (a black hole on the
/// whole address would rightly hold the kill, with no healthy endpoint to go to).
fn black_hole_is_killed_in_time(
    s: &Setup,
    agent: &Agent,
    client: &Client,
    port: u16,
) -> Result<()> {
    let budget = STALL + Duration::from_secs(3);
    let fault_ms = mono_ms();
    let decision = blackhole_is_killed(&s.lab, agent, port, budget)?;
    let after_ms = decision.at_ms.saturating_sub(fault_ms);
    eprintln!("killed {after_ms} ms after the black hole, during the flood");
    ensure!(
        u128::from(after_ms) <= budget.as_millis(),
        "killed {after_ms} ms after the fault; budget {budget:?}"
    );
    let error = client.wait_event("the client's error", Duration::from_secs(5), |e| {
        e.event == "error"
    })?;
    ensure!(error.errno == Some(ECONNABORTED), "{}", error.raw);
    Ok(())
}

/// What the flood reported at its end.
struct FloodDone {
    refused: u64,
}

impl FloodDone {
    fn wait(flood: &mut Proc) -> Result<Self> {
        let done =
            flood.wait_stdout("the flood's end", Duration::from_secs(FLOOD_S + 30), |l| {
                l.starts_with("done ")
            })?;
        let words: Vec<&str> = done.text.split_whitespace().collect();
        let n = |key: &str| -> Result<u64> {
            let at = words.iter().position(|w| *w == key);
            at.and_then(|i| words.get(i + 1)?.parse().ok())
                .with_context(|| format!("no {key} in {:?}", done.text))
        };
        let (refused, errors, calls, ms) =
            (n("refused")?, n("errors")?, n("setsockopt")?, n("ms")?);
        eprintln!(
            "flood: {refused} refused connects in {ms} ms ({} per second, {errors} other errors), {calls} setsockopt calls",
            refused * 1000 / ms.max(1)
        );
        ensure!(
            refused >= 100_000,
            "the flood made only {refused} connects: it proves nothing"
        );
        ensure!(
            calls >= 10_000,
            "the setsockopt loop made only {calls} calls"
        );
        Ok(Self { refused })
    }
}

/// `lifeline check` beside the agent warns about what it lost.
fn check_warns(s: &Setup, agent: &Agent) -> Result<()> {
    let cgroup = s.cgroup.path().to_string_lossy().into_owned();
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", s.lab.client.path()))
        .arg("--")
        .arg(lifeline_tests::infra::paths::lifeline()?)
        .args(["check", "--cgroup", &cgroup, "--status-socket"])
        .arg(&agent.status_socket);
    let out = lifeline_tests::infra::cmd::output(&mut cmd)?;
    let out = String::from_utf8_lossy(&out.stdout);
    let row = out
        .lines()
        .find(|l| l.starts_with("agent capacity"))
        .with_context(|| format!("no agent capacity row:\n{out}"))?;
    ensure!(
        row.split_whitespace().nth(2) == Some("warn")
            && row.contains("watched only for their peer NOT watched"),
        "{out}"
    );
    Ok(())
}
