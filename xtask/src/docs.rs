//! Man pages and shell completions for the Debian package, generated in xtask (by running
//! the `lifeline-docgen` crate) rather than in the agent's build script: cargo-deb takes
//! assets from fixed paths, not from a build script's `OUT_DIR`, and neither the shipped
//! binary nor its build should carry the generators.

use std::{path::Path, process::Command};

use anyhow::{Result, bail};
use xtask::process::capture;

/// Where the generated files go; `agent/Cargo.toml`'s deb assets name them from here.
pub(crate) const DIR: &str = "target/assets";

/// Regenerates `target/assets/{man,completions}`; returns how many files were written.
pub(crate) fn generate(ws: &Path) -> Result<usize> {
    let dir = ws.join(DIR);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(ws)
        .args(["run", "--quiet", "-p", "lifeline-docgen", "--"])
        .arg(&dir);
    let listed = capture("generating man pages and completions", &mut cmd)?;
    let count = listed.lines().count();
    if count == 0 {
        bail!("lifeline-docgen wrote nothing");
    }
    Ok(count)
}
