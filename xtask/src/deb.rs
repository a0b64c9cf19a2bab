//! `cargo xtask deb`: the Debian package (the static binary, the hardened unit, the example
//! config as a conffile, man pages and shell completions) with cargo-deb, installed first when
//! missing, for amd64 and arm64 (`arch.rs`). The binary is the musl build the container image
//! uses (one release build serves both, and the package works on any glibc); build-ebpf runs
//! first and visibly, as for `test`.

use std::{path::Path, process::Command};

use anyhow::Result;
use xtask::process::{Output, run};

use crate::{Phases, arch};

/// The cargo-deb release this project was checked with.
const CARGO_DEB: &str = "3.8.0";

pub(crate) fn deb(ws: &Path, phases: &mut Phases) -> Result<()> {
    crate::build_ebpf(ws, phases)?;
    phases.run("cross tools", crate::packages::ensure_cross)?;
    for a in arch::ALL {
        phases.run(a.phase, || crate::image::release_musl(ws, a))?;
    }
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
    // --no-build: the binaries above are the ones to ship (cargo-deb would build them the
    // same way); it names each package's architecture after the target triple.
    phases.run("cargo deb", || {
        for a in arch::ALL {
            run(
                &format!("building the {} Debian package", a.name),
                cargo()
                    .current_dir(ws)
                    .args(["deb", "-p", "lifeline", "--no-build", "--target", a.triple])
                    .args(["--output", "target/debian/"]),
                Output::Inherit,
            )?;
        }
        Ok(())
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
