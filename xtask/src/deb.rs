//! `cargo xtask deb`: the Debian package (the static binary, the hardened unit, the example
//! config as a conffile, man pages and shell completions) with cargo-deb, installed first when
//! missing. The binary is the musl build the container image uses (one release build serves
//! both, and the package works on any glibc); build-ebpf runs first and visibly, as for `test`.

use std::{path::Path, process::Command};

use anyhow::Result;
use xtask::process::{Output, run};

use crate::{Phases, image::MUSL};

/// The cargo-deb release this project was checked with.
const CARGO_DEB: &str = "3.8.0";

pub fn deb(ws: &Path, phases: &mut Phases) -> Result<()> {
    crate::build_ebpf(ws, phases)?;
    phases.run("musl build", || crate::image::release_musl(ws))?;
    phases.run("man pages", || crate::docs::generate(ws))?;
    if !has_cargo_deb() {
        phases.run("install cargo-deb", || {
            run(
                "installing cargo-deb",
                cargo().args(["install", "--locked", "cargo-deb", "--version", CARGO_DEB]),
                Output::Inherit,
            )
        })?;
    }
    // --no-build: the binary above is the one to ship (cargo-deb would build it the same way).
    phases.run("cargo deb", || {
        run(
            "building the Debian package",
            cargo()
                .current_dir(ws)
                .args(["deb", "-p", "lifeline", "--no-build", "--target", MUSL])
                .args(["--output", "target/debian/"]),
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
