//! `cargo xtask test` and `cargo xtask demo`. The lab builds network namespaces, mounts and
//! loads eBPF, so both need root; unit tests alone are a plain `cargo test`.

use std::{fs, path::Path, process::Command};

use anyhow::{Result, bail};
use xtask::process::{Output, run};

use crate::Phases;
use crate::cargo_run::{cargo, target_dir};

const LAB: &str = "lifeline-tests";

/// The README's test command, and what CI runs.
pub(crate) fn test(ws: &Path, phases: &mut Phases) -> Result<()> {
    require_root("test")?;
    phases.run("packages", crate::packages::ensure)?;
    // First and visibly: on a fresh machine setup installs the toolchain and bpf-linker, which
    // the agent's build script (run by `cargo test`) needs and never installs itself.
    crate::build_ebpf(ws, phases)?;
    phases.run("packaging checks", || crate::shipcheck::check(ws))?;
    phases.run("unit tests", || cargo(ws, "unit tests", &["test"]))?;
    if ws.join("tests/src/lib.rs").is_file() {
        phases.run("lab unit tests", || {
            cargo(ws, "lab unit tests", &["test", "-p", LAB, "--lib"])
        })?;
    }
    let build = ["build", "-p", "lifeline", "-p", LAB];
    phases.run("build", || {
        cargo(ws, "building lifeline and the lab", &build)
    })?;
    phases.run("go fixture", || crate::gofixture::build(ws))?;
    // The container lab test runs the image the README tells fleets to build.
    let image = crate::image::build(ws, phases)?;
    let lifeline = target_dir(ws)?.join("debug/lifeline");
    let log = target_dir(ws)?.join("lab-quiet-lane.log");
    let env = [
        ("LIFELINE_BIN", lifeline.as_path()),
        ("LIFELINE_IMAGE", image.archive.as_path()),
    ];
    phases.run("lab tests", || {
        crate::lanes::run_lab_tests(ws, LAB, &env, &log)
    })
}

/// The README's main command: the black-hole scenario without and with lifeline.
pub(crate) fn demo(ws: &Path, phases: &mut Phases) -> Result<()> {
    require_root("demo")?;
    phases.run("packages", crate::packages::ensure)?;
    crate::build_ebpf(ws, phases)?;
    let build = ["build", "-p", "lifeline", "-p", LAB, "--bins"];
    phases.run("build", || {
        cargo(ws, "building lifeline and lab-demo", &build)
    })?;
    let target = target_dir(ws)?.join("debug");
    let mut demo = Command::new(target.join("lab-demo"));
    demo.current_dir(ws)
        .env("LIFELINE_BIN", target.join("lifeline"));
    phases.run("demo", || run("the demo", &mut demo, Output::Inherit))
}

/// The lab creates network namespaces and nftables rules and loads eBPF: root only. Checked
/// first, so a plain user learns it at once rather than after the unit tests.
pub(crate) fn require_root(command: &str) -> Result<()> {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uids = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .unwrap_or_default();
    if uids.split_whitespace().nth(1) == Some("0") {
        return Ok(());
    }
    bail!(
        "`cargo xtask {command}` needs root for the lab (network namespaces, nftables, eBPF); run it as root, e.g. `sudo -E env PATH=\"$PATH\" cargo xtask {command}`"
    )
}
