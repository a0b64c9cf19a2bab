//! lab-bench: `cargo xtask bench [--quick] [--trials N] [--scenario A,B]` (as root,
//! `LIFELINE_BIN` set). Measures lifeline against the alternatives on the same faults in the
//! lab, then its cost and its scale, and writes docs/BENCHMARKS.md with the chart
//! docs/bench-outage.svg (`--quick` or `--scenario`: under target/bench/, so a smoke run or
//! a few rows never replace the full run's numbers).
//!
//! The `hold`, `sink` and `churn` subcommands are the bench's own socket helpers, started
//! by the bench inside its namespaces.

mod blip;
mod blip_stats;
mod blip_targets;
mod bpfstats;
mod bpfwindows;
mod cells;
mod chart;
mod contender;
mod cost;
mod costbpf;
mod costcmp;
mod fleet;
mod hold;
mod lineup;
mod machine;
mod matrix;
mod measure;
mod parts;
mod pool;
mod procstat;
mod proxy_rows;
mod report;
mod report_blip;
mod report_bpf;
mod report_cost;
mod report_more;
mod report_usual;
mod scale;
mod scale_why;
mod script;
mod sections;
mod soak;
mod soak_math;
mod soak_plan;
mod soak_report;
mod socklab;
mod stats;
mod sysctl;
mod targets;
mod testrun;
mod trial;
mod unit_rows;
mod usual;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Parser)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "command-line switches, each independent of the others"
)]
#[command(about = "lifeline benchmarks (root only; run through `cargo xtask bench`)")]
pub struct Args {
    /// 3 trials per cell, a 60 s cap and shorter cost runs (a smoke run, under 10 minutes).
    #[arg(long)]
    pub quick: bool,
    /// Trials per cell (default 20; 10 for restarted-flow-only and blip-one-of-two-3s; 3
    /// with --quick).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=200))]
    pub trials: Option<u16>,
    /// Labs run side by side.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub jobs: u16,
    /// Only these rows (comma-separated): no targets, cost or scale, and the document (with
    /// only these rows) goes under target/bench/ unless --out says otherwise; its tables are
    /// also printed.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub scenario: Vec<cells::Scenario>,
    /// Skip the cost and scale parts (for development).
    #[arg(long)]
    pub matrix_only: bool,
    /// Only the cost part (throughput, CPU, each hook's runs): replaces its own section of
    /// docs/BENCHMARKS.md (or of --out's) and nothing else.
    #[arg(long, conflicts_with_all = ["scenario", "matrix_only"])]
    pub cost: bool,
    /// Only the scale part, likewise.
    #[arg(long, conflicts_with_all = ["scenario", "matrix_only"])]
    pub scale: bool,
    /// Only the cost part's usual load (tens of watched sockets at 5 % loss): printed, nothing
    /// written (for looking into the agent's CPU there).
    #[arg(long, conflicts_with_all = ["scenario", "matrix_only", "cost", "scale"])]
    pub usual: bool,
    /// Where to write BENCHMARKS.md and the chart (default docs/; target/bench/ with --quick
    /// or --scenario).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only the loss soak (30 minutes), writing its section of docs/BENCHMARKS.md.
    #[arg(long)]
    pub soak: bool,
    /// The soak shortened to N minutes (phases scaled); writes under target/bench/.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=30))]
    pub soak_minutes: Option<u64>,
    /// Only the fleet part: simulated nodes behind one rotating endpoint, four scenarios,
    /// four contenders; writes the `fleet` section of BENCHMARKS.md and bench-fleet.svg.
    #[arg(long)]
    pub fleet: bool,
    /// Nodes per contender in the fleet part (sized down to what the kernel can attach).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=250))]
    pub fleet_nodes: u16,
    #[command(subcommand)]
    pub helper: Option<hold::Helper>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(h) = args.helper {
        return hold::run(h);
    }
    if !lifeline_tests::infra::util::is_root() {
        eprintln!(
            "lab-bench: error: needs root (namespaces, nftables, eBPF); run `cargo xtask bench` as root"
        );
        return ExitCode::FAILURE;
    }
    pool::install_signal_flag();
    let result = if args.soak || args.soak_minutes.is_some() {
        parts::soak(&args)
    } else if args.fleet {
        parts::fleet(&args)
    } else {
        bench(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lab-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bench(args: &Args) -> anyhow::Result<()> {
    if args.cost || args.scale {
        return parts::cost_and_scale(args);
    }
    if args.usual {
        let u = usual::run(args.quick)?;
        let mut s = String::new();
        report_usual::usual(&mut s, &u)?;
        print!("{s}");
        return Ok(());
    }
    let start = Instant::now();
    // The quick run's cap is shorter: it only has to show the shape, in under 10 minutes.
    let cap = Duration::from_secs(if args.quick { 60 } else { 120 });
    let scenarios = cells::Scenario::ALL
        .into_iter()
        .filter(|s| args.scenario.is_empty() || args.scenario.contains(s))
        .collect();
    let plan = matrix::Plan {
        trials: args.trials.map(usize::from),
        quick: args.quick,
        cap,
        workers: args.jobs.into(),
        scenarios,
    };
    let (cells, busy_pct) = matrix::run_matrix(&plan);
    pool::check_interrupted()?; // Ctrl-C: stop here, and write no half document
    // A failing part is reported in the document; it never throws the matrix away.
    let mut failures = Vec::new();
    let (cost, bpf, usual, scale) = if args.matrix_only || plan.is_subset() {
        (None, None, None, None)
    } else {
        let cost = cost::run(args.quick)
            .map_err(|e| failures.push(format!("cost: {e:#}")))
            .ok();
        let bpf = costbpf::run(args.quick)
            .map_err(|e| failures.push(format!("cost per hook: {e:#}")))
            .ok();
        let usual = usual::run(args.quick)
            .map_err(|e| failures.push(format!("usual load: {e:#}")))
            .ok();
        (cost, bpf, usual, Some(scale::run()))
    };
    let out = args.out.clone().unwrap_or_else(|| {
        let ws = lifeline_tests::infra::paths::workspace();
        if args.quick || plan.is_subset() {
            ws.join("target/bench")
        } else {
            ws.join("docs")
        }
    });
    pool::check_interrupted()?;
    std::fs::create_dir_all(&out)?;
    chart::draw(&out.join("bench-outage.svg"), &cells, cap)?;
    let doc = report::Doc {
        plan: &plan,
        cells: &cells,
        busy_pct,
        failures,
        cost: cost.as_ref(),
        bpf: bpf.as_ref(),
        usual: usual.as_ref(),
        scale: scale.as_ref(),
        elapsed: start.elapsed(),
        command: std::env::var("LAB_BENCH_COMMAND").unwrap_or_else(|_| "cargo xtask bench".into()),
    };
    let path = out.join("BENCHMARKS.md");
    report::write(&path, &doc)?;
    if plan.is_subset() {
        print!("\n{}", report::matrix_text(&doc)?);
    }
    println!(
        "lab-bench: wrote {} in {:.1} min",
        path.display(),
        start.elapsed().as_secs_f64() / 60.0
    );
    Ok(())
}
