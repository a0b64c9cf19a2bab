//! `cargo xtask deb`: the Debian package (binary, hardened unit, example config as a
//! conffile) with cargo-deb, installed first when missing. The agent's build script builds
//! the eBPF object, so build-ebpf runs first and visibly, as for `test`.

use std::{path::Path, process::Command};

use anyhow::Result;
use xtask::process::{Output, run};

use crate::Phases;

/// The cargo-deb release this project was checked with.
const CARGO_DEB: &str = "3.8.0";

pub fn deb(ws: &Path, phases: &mut Phases) -> Result<()> {
    phases.run("build-ebpf", || xtask::ebpf::build(ws))?;
    if !has_cargo_deb() {
        phases.run("install cargo-deb", || {
            run(
                "installing cargo-deb",
                cargo().args(["install", "--locked", "cargo-deb", "--version", CARGO_DEB]),
                Output::Inherit,
            )
        })?;
    }
    phases.run("cargo deb", || {
        run(
            "building the Debian package",
            cargo().current_dir(ws).args(["deb", "-p", "lifeline"]),
            Output::Inherit,
        )
    })
}

fn has_cargo_deb() -> bool {
    cargo()
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}
