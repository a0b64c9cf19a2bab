//! `cargo xtask bench [--quick]`: lifeline against the alternatives in the lab, its cost and
//! its scale (needs root). The agent is built in release mode, as it ships: its CPU and
//! memory are what the bench reports. The bench itself is `bench/` (lab-bench).

use std::path::Path;
use std::process::Command;

use anyhow::Result;
use xtask::{
    ebpf,
    process::{Output, run},
};

use crate::Phases;
use crate::lab::{cargo, require_root, target_dir};

pub fn bench(ws: &Path, phases: &mut Phases, quick: bool) -> Result<()> {
    require_root("bench")?;
    phases.run("packages", crate::packages::ensure)?;
    phases.run("build-ebpf", || ebpf::build(ws))?;
    phases.run("build (release agent)", || {
        cargo(
            ws,
            "building lifeline (release)",
            &["build", "--release", "-p", "lifeline"],
        )
    })?;
    let fixtures = [
        "build",
        "-p",
        "lifeline-tests",
        "--bins",
        "-p",
        "lifeline-bench",
    ];
    phases.run("build (lab, bench)", || {
        cargo(ws, "building the lab fixtures and lab-bench", &fixtures)
    })?;
    let target = target_dir(ws)?;
    let mut cmd = Command::new(target.join("debug/lab-bench"));
    let shown = if quick {
        "cargo xtask bench --quick"
    } else {
        "cargo xtask bench"
    };
    cmd.current_dir(ws)
        .env("LIFELINE_BIN", target.join("release/lifeline"))
        .env("LAB_BENCH_COMMAND", shown);
    if quick {
        cmd.arg("--quick");
    }
    phases.run("bench", || run("the bench", &mut cmd, Output::Inherit))
}
