//! `cargo xtask setup`: everything the eBPF build needs that a build script must not install.
//!
//! The agent's `build.rs` only looks for the pinned nightly, its rust-src and bpf-linker
//! ([`crate::ebpf::build`]); this installs them. Every command that needs the eBPF object runs
//! it first, so `cargo xtask demo` and `cargo xtask test` still set up a fresh machine.

use std::{path::PathBuf, time::Instant};

use anyhow::Result;

use crate::{linker, note, toolchain};

/// What [`setup`] found or installed.
pub struct Ready {
    pub toolchain: toolchain::Toolchain,
    /// The directory of the working bpf-linker.
    pub linker_dir: PathBuf,
}

/// Installs what is missing of the pinned toolchain, its rust-src and bpf-linker (built against
/// that toolchain's LLVM). Idempotent: when everything is there it runs a few rustup queries
/// and `bpf-linker --version`, well under a second.
///
/// # Errors
/// The install step that failed, with its log.
pub fn setup() -> Result<Ready> {
    let start = Instant::now();
    let tc = toolchain::ensure()?;
    let linker_dir = linker::ensure(&tc)?;
    note(&format!(
        "set up: {} with rust-src, bpf-linker in {} ({:.1}s)",
        toolchain::TOOLCHAIN,
        linker_dir.display(),
        start.elapsed().as_secs_f64()
    ));
    Ok(Ready {
        toolchain: tc,
        linker_dir,
    })
}
