//! The loss soak (`cargo xtask bench --soak`): lifeline at its defaults watching 100 idle
//! connections of Go-like clients (keepalive 30,30,9 set after connect), 50 heartbeat
//! connections (1 s) and an iperf3 bulk flow (50 Mbit/s) with its idle control connection,
//! over a path that drops packets at random each way: 5 % for 10 minutes (the server paused
//! 20 s in the middle), 10 % for 10, then 5 % with three 60 s bursts of 30 %. Every client
//! re-dials after an error, so the population stays whole and each death is counted.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use lifeline_tests::{
    Agent, AgentArgs, Cgroup, Client, Decision, Fault, Lab, Proc, fixtures::client::start_server,
    mono_ms, wait_until,
};

use crate::soak_plan::{Phase, phases};

pub(crate) const IDLE: usize = 100;
pub(crate) const BUSY: usize = 50;
pub(crate) const SERVER: &str = "198.51.100.2:6443";

/// What one phase measured.
pub(crate) struct PhaseRun {
    pub phase: Phase,
    /// Soak-relative bounds in `CLOCK_MONOTONIC` ms.
    pub from_ms: u64,
    pub to_ms: u64,
    /// Packets through the loss rules and dropped by them.
    pub packets: (u64, u64),
    /// Keepalive probes the client namespace sent (`TcpExtTCPKeepAlive`).
    pub keepalive_probes: u64,
}

pub(crate) struct Soak {
    pub minutes: u64,
    pub phases: Vec<PhaseRun>,
    pub decisions: Vec<Decision>,
    /// (group, event) of every client error, with its time.
    pub deaths: Vec<(&'static str, u64, String)>,
    /// When iperf3 ended before the soak did (ms into the soak), and how.
    pub bulk_end: Option<(u64, String)>,
}

pub(crate) fn run(minutes: u64) -> Result<Soak> {
    println!("soak: {minutes} min, {IDLE} idle + {BUSY} heartbeat connections + a bulk flow");
    let lab = Lab::new()?;
    // Segments on the wire, not 64 KB GSO bundles: the loss rule must drop one segment at a
    // time, as a lossy network does, not 40 of the bulk flow's at once.
    for ns in [&lab.client, &lab.server] {
        ns.ip(&["link", "set", "dev", "eth0", "gso_max_segs", "1"])?;
    }
    let cgroup = Cgroup::new()?;
    let life = format!("{}m", minutes + 10);
    let server = start_server(&lab, &["--lifetime", &life])?;
    let iperf_server = lab.server.command("iperf3", &["-s", "-p", "443"]);
    let _iperf_server = Proc::spawn("iperf3 server", iperf_server)?;
    let args = AgentArgs {
        stall_timeout: None,
        ports: "6443,443".into(),
        extra: vec!["--endpoint".into(), SERVER.into()],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&lab, &cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let clients = start_clients(&lab, &cgroup, (IDLE, BUSY), &life)?;
    let secs = (minutes * 60 + 60).to_string();
    let iperf = [
        "-c",
        "198.51.100.2",
        "-p",
        "443",
        "-t",
        &secs,
        "-b",
        "50M",
        "-i",
        "0",
    ];
    let mut bulk = Proc::spawn(
        "iperf3",
        cgroup.command_in_netns(lab.client.name(), "iperf3", &iperf),
    )?;
    all_watched(&agent, IDLE + BUSY + 2)?;
    let (start_ms, mut runs, mut bulk_end) = (mono_ms(), Vec::new(), None);
    for phase in phases(minutes) {
        runs.push(run_phase(
            &lab,
            &server,
            &mut bulk,
            &mut bulk_end,
            start_ms,
            phase,
        )?);
        crate::pool::check_interrupted()?;
    }
    let decisions = agent.decisions();
    let mut deaths = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let group = if i < IDLE { "idle" } else { "heartbeat" };
        for e in c.errors() {
            deaths.push((group, e.mono_ms, e.error.clone().unwrap_or(e.event.clone())));
        }
    }
    Ok(Soak {
        minutes,
        phases: runs,
        decisions,
        deaths,
        bulk_end,
    })
}

/// `idle` Go-like watches (keepalive 30,30,9 set after connect, quiet for `life`: no read
/// timeout of their own) and `busy` heartbeat connections (a request a second) to the lab's
/// API server from `cgroup`, each re-dialling after an error.
///
/// # Errors
/// When a client cannot start.
pub(crate) fn start_clients(
    lab: &Lab,
    cgroup: &Cgroup,
    (idle, busy): (usize, usize),
    life: &str,
) -> Result<Vec<Client>> {
    let mut clients = Vec::new();
    for i in 0..idle + busy {
        let mut a = vec!["--peer", SERVER, "--lifetime", life];
        if i < idle {
            a.extend(["--io-timeout", "120m"]);
            a.extend(["--keepalive", "30,30,9", "--keepalive-after-connect"]);
            a.extend(["watch", "--every", "3600", "--redial"]);
        } else {
            a.extend(["heartbeat", "--interval", "1s", "--redial"]);
        }
        clients.push(Client::start(lab, Some(cgroup), &a)?);
    }
    Ok(clients)
}

/// Waits until `lifeline status` lists at least `n` sockets.
///
/// # Errors
/// When it does not within a minute.
pub(crate) fn all_watched(agent: &Agent, n: usize) -> Result<()> {
    wait_until(
        "every connection watched",
        Duration::from_mins(1),
        Duration::from_millis(500),
        || Ok((agent.status()?.sockets.len() >= n).then_some(())),
    )
}

/// One phase, second by second: the loss rule in force, the pause, the bulk flow's fate.
fn run_phase(
    lab: &Lab,
    server: &Proc,
    bulk: &mut Proc,
    bulk_end: &mut Option<(u64, String)>,
    start_ms: u64,
    phase: Phase,
) -> Result<PhaseRun> {
    let t0 = Instant::now();
    let from_ms = mono_ms();
    let probes0 = keepalive_probes(lab)?;
    let (mut fault, mut loss, mut packets): (Option<Fault>, u8, (u64, u64)) = (None, 0, (0, 0));
    for t in phase.from_s..phase.to_s {
        let want = phase.loss_at(t);
        if want != loss || fault.is_none() {
            if let Some(f) = fault.take() {
                add(&mut packets, lab.counters(&f)?);
                lab.heal(&f)?;
            }
            fault = Some(lab.loss(want)?);
            loss = want;
        }
        server.signal(if phase.paused_at(t) {
            libc::SIGSTOP
        } else {
            libc::SIGCONT
        });
        if bulk_end.is_none()
            && let Some(st) = bulk.try_status()
        {
            let why = bulk
                .stderr_text()
                .lines()
                .last()
                .unwrap_or_default()
                .to_owned();
            *bulk_end = Some((mono_ms() - start_ms, format!("{st}: {why}")));
        }
        let next = Duration::from_secs(t + 1 - phase.from_s);
        std::thread::sleep(next.saturating_sub(t0.elapsed()));
    }
    server.signal(libc::SIGCONT);
    if let Some(f) = fault {
        add(&mut packets, lab.counters(&f)?);
        lab.heal(&f)?;
    }
    let keepalive_probes = keepalive_probes(lab)?.saturating_sub(probes0);
    println!(
        "soak: phase \"{}\" done: {} of {} packets dropped",
        phase.name, packets.1, packets.0
    );
    Ok(PhaseRun {
        phase,
        from_ms,
        to_ms: mono_ms(),
        packets,
        keepalive_probes,
    })
}

fn add(sum: &mut (u64, u64), (a, b): (u64, u64)) {
    sum.0 += a;
    sum.1 += b;
}

/// `TcpExtTCPKeepAlive` of the client namespace: keepalive probes sent so far.
fn keepalive_probes(lab: &Lab) -> Result<u64> {
    let text = lab.client.exec("cat", &["/proc/net/netstat"])?;
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next(), lines.next());
    let (names, values) = names
        .zip(values)
        .context("no TcpExt lines in /proc/net/netstat")?;
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "TCPKeepAlive")
        .and_then(|(_, v)| v.parse().ok())
        .context("no TCPKeepAlive counter")
}
