//! A node's usual load, in the cost part: lifeline at its defaults (`--endpoint`) watching
//! tens of connections, as a node's kubelet and node-local clients hold them (20 idle
//! Go-like watches with keepalive 30,30,9 set after connect, 20 heartbeat connections, one
//! request a second), over a path that drops 5 % of packets at random each way. The agent's
//! CPU is sampled over a window after a settling time, with what it had to look at over the
//! same window: the probe's unanswered-probe news and fast pokes (`scale_why`), and its
//! decisions (a kill here would be a false one: the peer is alive).

use std::time::Duration;

use anyhow::Result;
use lifeline_tests::{Agent, AgentArgs, Cgroup, Lab, fixtures::client::start_server};

use crate::{
    procstat::sample,
    scale_why::{Counters, METRICS, Rates},
    soak::{SERVER, all_watched, start_clients},
};

const IDLE: usize = 20;
const BUSY: usize = 20;
pub(crate) const LOSS_PCT: u8 = 5;
/// The target, % of one core.
pub(crate) const TARGET_PCT: f64 = 0.3;

pub(crate) struct Usual {
    pub sockets: usize,
    /// Loss on and the agent left to it before the window, then the window.
    pub settle: Duration,
    pub window: Duration,
    /// % of one core, and max RSS in KiB, over the window.
    pub cpu_pct: f64,
    pub rss_kib: u64,
    pub why: Rates,
    /// Packets through the loss rule and dropped by it over the whole run.
    pub packets: (u64, u64),
    /// Decisions other than holds over the whole run (each one a false kill here).
    pub acts: usize,
}

pub(crate) fn run(quick: bool) -> Result<Usual> {
    let (settle, window) = if quick { (10, 20) } else { (30, 120) };
    println!(
        "cost: usual load, {IDLE} idle + {BUSY} heartbeat connections at {LOSS_PCT} % loss, {window} s"
    );
    let lab = Lab::new()?;
    let cgroup = Cgroup::new()?;
    let life = format!("{}s", settle + window + 120);
    let _server = start_server(&lab, &["--lifetime", &life])?;
    let args = AgentArgs {
        stall_timeout: None,
        extra: ["--endpoint", SERVER, "--metrics-addr", METRICS]
            .map(String::from)
            .into(),
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&lab, &cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let _clients = start_clients(&lab, &cgroup, (IDLE, BUSY), &life)?;
    let sockets = IDLE + BUSY;
    all_watched(&agent, sockets)?;
    let fault = lab.loss(LOSS_PCT)?;
    std::thread::sleep(Duration::from_secs(settle));
    crate::pool::check_interrupted()?;
    let before = Counters::read(&lab)?;
    let (cpu_pct, rss_kib) = sample(agent.proc.pid(), Duration::from_secs(window))?;
    let why = before.to(&Counters::read(&lab)?);
    let packets = lab.counters(&fault)?;
    lab.heal(&fault)?;
    let acts = agent
        .decisions()
        .iter()
        .filter(|d| d.outcome != "held")
        .count();
    println!(
        "cost: usual load: {cpu_pct:.3} % CPU, {rss_kib} KiB RSS, {:.2} news/s, {:.2} pokes/s, {acts} decisions",
        why.unanswered, why.pokes
    );
    Ok(Usual {
        sockets,
        settle: Duration::from_secs(settle),
        window: Duration::from_secs(window),
        cpu_pct,
        rss_kib,
        why,
        packets,
        acts,
    })
}
