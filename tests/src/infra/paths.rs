//! Where the binaries under test are: the fixtures next to us, the agent from `LIFELINE_BIN`.

use std::path::PathBuf;

use anyhow::{Result, bail};

/// The workspace root (this crate lives in `<workspace>/tests`).
#[must_use]
pub fn workspace() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map_or(manifest.clone(), PathBuf::from)
}

/// The cargo output directory of the running executable: `target/debug` both for a bin
/// (`target/debug/lab-demo`) and for a test (`target/debug/deps/blackhole-HASH`).
fn exe_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    Some(if dir.ends_with("deps") {
        dir.parent()?.to_path_buf()
    } else {
        dir.to_path_buf()
    })
}

/// A fixture binary of this crate (`lab-server`, `lab-client`). `cargo test` builds them
/// before the tests; `LAB_BIN_DIR` overrides where to look.
///
/// # Errors
/// When the binary is not there.
pub fn fixture(name: &str) -> Result<PathBuf> {
    let dir = std::env::var_os("LAB_BIN_DIR")
        .map(PathBuf::from)
        .or_else(exe_dir);
    let Some(path) = dir.map(|d| d.join(name)) else {
        bail!("cannot find the directory of {name}")
    };
    if !path.exists() {
        let how = if name.starts_with("go-") {
            "`cargo xtask test` builds it with Debian's golang-go (tests/go)"
        } else {
            "build it with `cargo build -p lifeline-tests --bins`"
        };
        bail!("fixture {} is missing; {how}", path.display());
    }
    Ok(path)
}

/// The `lifeline` binary: `LIFELINE_BIN`, else the one in our own target dir, else
/// `<workspace>/target/debug/lifeline`. `cargo xtask test` builds it and sets `LIFELINE_BIN`.
///
/// # Errors
/// When no such file exists.
pub fn lifeline() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("LIFELINE_BIN") {
        let p = PathBuf::from(p);
        if !p.exists() {
            bail!("LIFELINE_BIN={} does not exist", p.display());
        }
        return Ok(p);
    }
    let candidates = [
        exe_dir().map(|d| d.join("lifeline")),
        Some(workspace().join("target/debug/lifeline")),
    ];
    for c in candidates.into_iter().flatten() {
        if c.exists() {
            return Ok(c);
        }
    }
    bail!(
        "no lifeline binary: set LIFELINE_BIN or run `cargo build -p lifeline` (or `cargo xtask test`)"
    )
}
