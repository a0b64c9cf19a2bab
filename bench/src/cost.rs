//! What lifeline costs: iperf3 throughput and whole-machine CPU per GB with the agent off and
//! on, alternating in one run, while 1,000 watched and 10,000 unwatched connections exist;
//! the agent's RSS and CPU at rest and under 1,000 connects a second in the watched cgroup;
//! and the time from its start to `event=ready`.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::procstat::{machine_busy_s, sample};
use crate::socklab::{CHURN, IPERF, SockLab, bench_exe};

pub(crate) struct Round {
    pub agent_on: bool,
    /// The bulk flow itself watched (from the watched cgroup) or not (from outside it).
    pub watched: bool,
    pub gbit_s: f64,
    pub cpu_s_per_gb: f64,
}

pub(crate) struct Cost {
    pub rounds: Vec<Round>,
    pub iperf_secs: u64,
    pub ready: Vec<Duration>,
    pub watched_seen: usize,
    /// (CPU % of one core, max RSS KiB) at rest and under churn.
    pub rest: (f64, u64),
    pub churn: (f64, u64),
    pub churn_rate: f64,
}

pub(crate) fn run(quick: bool) -> Result<Cost> {
    println!("cost: 1,000 watched and 10,000 unwatched connections, iperf3 with lifeline off/on");
    let (pairs, secs) = if quick { (1, 5) } else { (6, 8) };
    let mut l = SockLab::new()?;
    l.hold(1000, true)?;
    l.hold(10_000, false)?;
    let _server = l.iperf_server()?;
    let (mut rounds, mut ready) = (Vec::new(), Vec::new());
    let (mut rest, mut churn, mut churn_rate, mut watched_seen) = ((0.0, 0), (0.0, 0), 0.0, 0);
    for i in 0..pairs * 2 {
        crate::pool::check_interrupted()?;
        let agent_on = i % 2 == 1;
        let agent = if agent_on {
            let (a, took) = l.agent(&[])?;
            ready.push(took);
            std::thread::sleep(Duration::from_secs(2)); // adoption and first sweeps settle
            Some(a)
        } else {
            None
        };
        for watched in [true, false] {
            let round = iperf(&l, secs, agent_on, watched)?;
            println!(
                "cost: lifeline {}, {} flow: {:.2} Gbit/s, {:.3} CPU-s per GB",
                if agent_on { "on " } else { "off" },
                if watched { "watched  " } else { "unwatched" },
                round.gbit_s,
                round.cpu_s_per_gb
            );
            rounds.push(round);
        }
        if let (Some(a), true) = (&agent, i == pairs * 2 - 1) {
            watched_seen = SockLab::watched(a)?.0;
            let pid = a.proc.pid();
            rest = sample(pid, Duration::from_secs(secs))?;
            (churn, churn_rate) = with_churn(&l, pid, secs)?;
            println!(
                "cost: at rest {:.2} % CPU, {} KiB RSS; churn {:.2} % CPU, {} KiB RSS",
                rest.0, rest.1, churn.0, churn.1
            );
        }
    }
    Ok(Cost {
        rounds,
        iperf_secs: secs,
        ready,
        watched_seen,
        rest,
        churn,
        churn_rate,
    })
}

/// One iperf3 run to port 6443, from the watched cgroup (a watched socket, the worst case)
/// or from outside it (must cost nothing).
pub(crate) fn iperf(l: &SockLab, secs: u64, agent_on: bool, watched: bool) -> Result<Round> {
    let t = secs.to_string();
    let args = ["-c", IPERF, "-p", "6443", "-t", &t, "-J"];
    let mut cmd = if watched {
        l.cgroup
            .command_in_netns(l.lab.client.name(), "iperf3", &args)
    } else {
        l.lab.client.command("iperf3", &args)
    };
    let busy0 = machine_busy_s()?;
    let out = lifeline_tests::infra::cmd::output(&mut cmd)?;
    let busy = machine_busy_s()? - busy0;
    anyhow::ensure!(
        out.status.success(),
        "iperf3 failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: Value = serde_json::from_slice(&out.stdout).context("iperf3 -J output")?;
    let recv = &v["end"]["sum_received"];
    let bytes = recv["bytes"]
        .as_f64()
        .context("no bytes in iperf3's report")?;
    let bps = recv["bits_per_second"]
        .as_f64()
        .context("no rate in iperf3's report")?;
    Ok(Round {
        agent_on,
        watched,
        gbit_s: bps / 1e9,
        cpu_s_per_gb: busy / (bytes / 1e9),
    })
}

/// The agent's CPU and RSS while 1,000 connections a second open and close in its cgroup.
fn with_churn(l: &SockLab, pid: u32, secs: u64) -> Result<((f64, u64), f64)> {
    let (peer, s) = (format!("{CHURN}:6443"), secs.to_string());
    let args = ["churn", "--peer", &peer, "--rate", "1000", "--seconds", &s];
    let cmd = l
        .cgroup
        .command_in_netns(l.lab.client.name(), &bench_exe()?, &args);
    let mut p = lifeline_tests::Proc::spawn("churn", cmd)?;
    let usage = sample(pid, Duration::from_secs(secs))?;
    let line = p.wait_stdout("the churn", Duration::from_secs(secs + 30), |t| {
        t.contains("churned")
    })?;
    let v: Value = serde_json::from_str(&line.text)?;
    let rate = v["count"].as_f64().unwrap_or(0.0) / v["seconds"].as_f64().unwrap_or(1.0);
    Ok((usage, rate))
}
