//! `cargo xtask bench --fleet [--fleet-nodes N]`: a fleet of simulated nodes behind one
//! rotating endpoint, each with a kubelet-like client, under four scenarios, with the four
//! contenders side by side in the same fleet. Writes the `fleet` section of
//! docs/BENCHMARKS.md and docs/bench-fleet.svg from the run.

mod chart;
mod contender;
mod dump;
mod goals;
mod nodes;
mod raw;
mod report;
mod run;
mod scenario;
mod serverlog;
mod sizing;
mod tally;
mod topo;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use contender::Contender;
use scenario::Scenario;
use tally::Tally;

use crate::procstat::{machine_busy_s, proc_cpu_s, vm_kib};

/// What the run measured besides the scenarios: the sizing and the machine's load.
pub(crate) struct Machine {
    pub requested: usize,
    pub per_contender: usize,
    pub attached_before: usize,
    pub connect_us_before: f64,
    pub connect_us_with: f64,
    pub agents_idle_cpu_pct: f64,
    pub agents_rss_mib: f64,
    pub busy_pct: f64,
    pub elapsed: Duration,
    pub command: String,
}

/// Runs the fleet part and writes its section and chart under `out`.
///
/// # Errors
/// When the fleet cannot be built or a scenario fails; everything is torn down either way.
pub(crate) fn run(requested: usize, out: &Path, command: String) -> Result<()> {
    let start = Instant::now();
    let attached = sizing::attached_sock_ops()?;
    let free = sizing::KERNEL_MAX_PROGS.saturating_sub(attached + sizing::HEADROOM);
    let per = requested
        .min(free)
        .min(topo::MAX_NODES / Contender::ALL.len());
    ensure!(
        per > 0,
        "no free sock_ops slot on the cgroup root ({attached} attached)"
    );
    if per < requested {
        println!(
            "fleet: {requested} nodes per contender do not fit; running {per} (see the report)"
        );
    }
    let fleet = topo::Fleet::new(per)?;
    println!(
        "fleet: {} nodes up in {:.0} s",
        fleet.nodes.len(),
        start.elapsed().as_secs_f64()
    );
    let probe_ns = fleet.nodes[0].ns.name().to_owned();
    let connect_us_before = sizing::connect_us(&probe_ns, 3000)?;
    let mut agents = nodes::start_agents(&fleet)?;
    let connect_us_with = sizing::connect_us(&probe_ns, 3000)?;
    let pids: Vec<u32> = agents.iter().map(|a| a.proc.pid()).collect();
    let cpu = |p: &[u32]| {
        p.iter()
            .filter_map(|&pid| proc_cpu_s(pid).ok())
            .sum::<f64>()
    };
    let (c0, w0) = (cpu(&pids), Instant::now());
    std::thread::sleep(Duration::from_secs(10));
    let agents_idle_cpu_pct = (cpu(&pids) - c0) / w0.elapsed().as_secs_f64() * 100.0;
    #[expect(clippy::cast_precision_loss, reason = "KiB of a few agents")]
    let agents_rss_mib = pids
        .iter()
        .filter_map(|&p| vm_kib(p, "VmRSS").ok())
        .sum::<u64>() as f64
        / 1024.0;
    let (busy0, run_start) = (machine_busy_s()?, Instant::now());
    let first_agent = Contender::ALL.len().saturating_sub(1) * per;
    let mut results = Vec::new();
    for s in Scenario::ALL {
        // Fresh agents for every scenario but the first (which runs on the ones measured
        // above): a scenario starts from an agent's clean state, as the first one does,
        // instead of from what the previous fault taught it.
        if s != Scenario::ALL[0] {
            agents.clear();
            agents = nodes::start_agents(&fleet)?;
        }
        let raw = run::scenario(&fleet, &agents, first_agent, s)?;
        dump::agents(s, &agents);
        let tallies: Vec<Tally> = Contender::ALL
            .iter()
            .enumerate()
            .map(|(i, &c)| Tally::of(&raw, c, &(i * per..(i + 1) * per).collect::<Vec<_>>()))
            .collect();
        for t in &tallies {
            println!(
                "fleet: {} x {}: on api1/2/3 {:?}, NotReady {} of {}, reconnects/s peak {}, kills {}",
                s.label(),
                t.contender.name(),
                t.on_server,
                t.not_ready_total,
                t.nodes,
                Tally::peak(&t.reconnects),
                t.kills
            );
        }
        results.push((raw, tallies));
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    #[expect(clippy::cast_precision_loss, reason = "a core count")]
    let busy_pct =
        (machine_busy_s()? - busy0) / run_start.elapsed().as_secs_f64() / cores as f64 * 100.0;
    drop(agents);
    drop(fleet);
    let machine = Machine {
        requested,
        per_contender: per,
        attached_before: attached,
        connect_us_before,
        connect_us_with,
        agents_idle_cpu_pct,
        agents_rss_mib,
        busy_pct,
        elapsed: start.elapsed(),
        command,
    };
    std::fs::create_dir_all(out)?;
    chart::draw(&out.join("bench-fleet.svg"), &results)?;
    let body = report::section(&machine, &results);
    let doc = out.join("BENCHMARKS.md");
    crate::sections::replace(&doc, "fleet", &body)?;
    println!(
        "lab-bench: wrote the fleet section of {} in {:.1} min",
        doc.display(),
        start.elapsed().as_secs_f64() / 60.0
    );
    Ok(())
}
