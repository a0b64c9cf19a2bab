//! `cargo deny check bans licenses sources` against `deny.toml`, the last gate of `cargo xtask
//! lint`: licenses the project has read, crates.io only, no wildcard versions. cargo-deny is
//! installed first when missing (built from crates.io: no prebuilt binary is reachable here).
//! Advisories are left out: their database is a GitHub repository (see deny.toml).

use std::{path::Path, process::Command};

use anyhow::Result;
use xtask::process::{Output, run};

/// The cargo-deny release this project was checked with (`--locked`: its own lockfile).
const CARGO_DENY: &str = "0.20.2";

/// # Errors
/// When cargo-deny cannot be installed, or a check fails (its report names the crate).
pub(crate) fn check(ws: &Path) -> Result<()> {
    if !installed() {
        run(
            "installing cargo-deny",
            cargo().args(["install", "--locked", "cargo-deny", "--version", CARGO_DENY]),
            Output::Inherit,
        )?;
    }
    run(
        "cargo deny check",
        cargo().current_dir(ws).args([
            "deny",
            "check",
            "--hide-inclusion-graph",
            "bans",
            "licenses",
            "sources",
        ]),
        Output::Inherit,
    )
}

fn installed() -> bool {
    cargo()
        .args(["deny", "--version"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(CARGO_DENY))
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}
