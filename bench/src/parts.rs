//! The parts of the bench that run alone (`--soak`, `--fleet`, `--cost`, `--scale`): each
//! writes only its own section of BENCHMARKS.md (`crate::sections`), never the matrix.

use anyhow::Result;

use crate::{Args, cost, costbpf, pool, report, scale, sections, soak, soak_report, usual};

fn docs() -> std::path::PathBuf {
    lifeline_tests::infra::paths::workspace().join("docs")
}

/// The loss soak: its section of docs/BENCHMARKS.md (a shortened run: of
/// target/bench/BENCHMARKS.md).
pub(crate) fn soak(args: &Args) -> Result<()> {
    let minutes = args.soak_minutes.unwrap_or(30);
    let soak = soak::run(minutes)?;
    let dir = if minutes == 30 {
        docs()
    } else {
        lifeline_tests::infra::paths::workspace().join("target/bench")
    };
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("BENCHMARKS.md");
    let body = soak_report::section(&soak, &report::commit())?;
    sections::replace(&path, "soak", &body)?;
    print!("{body}");
    println!("lab-bench: wrote the soak into {}", path.display());
    Ok(())
}

/// The fleet: its section and docs/bench-fleet.svg.
pub(crate) fn fleet(args: &Args) -> Result<()> {
    let out = args.out.clone().unwrap_or_else(docs);
    let command =
        std::env::var("LAB_BENCH_COMMAND").unwrap_or_else(|_| "cargo xtask bench --fleet".into());
    crate::fleet::run(args.fleet_nodes.into(), &out, command)
}

/// `--cost` and/or `--scale`: those parts alone, each replacing its own section.
pub(crate) fn cost_and_scale(args: &Args) -> Result<()> {
    let out = args.out.clone().unwrap_or_else(docs);
    std::fs::create_dir_all(&out)?;
    let path = out.join("BENCHMARKS.md");
    if args.cost {
        let cost = cost::run(args.quick)?;
        pool::check_interrupted()?;
        let bpf = costbpf::run(args.quick)?;
        pool::check_interrupted()?;
        let usual = usual::run(args.quick)?;
        let body = report::cost_section(Some(&cost), Some(&bpf), Some(&usual))?;
        sections::replace(&path, "cost", &body)?;
        print!("{body}");
    }
    if args.scale {
        let sc = scale::run();
        let body = report::scale_section(&sc)?;
        sections::replace(&path, "scale", &body)?;
        print!("{body}");
    }
    println!("lab-bench: wrote {}", path.display());
    Ok(())
}
