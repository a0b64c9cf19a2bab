//! `cargo xtask lint`: the gates CI runs: formatting, the import gate (`imports/`), the
//! judge's purity (`purity.rs`), two clippy passes like aya-template's: the host crates
//! with the stable toolchain, the eBPF crate with the pinned nightly for its own target (the
//! workspace build cannot lint both at once: the eBPF crate needs `-Z build-std=core`), and
//! the host crates' docs, private items too, with warnings as errors (a broken intra-doc
//! link is a comment that points nowhere), and last `cargo deny` (`deny.rs`).

use std::{path::Path, process::Command};

use anyhow::Result;
use xtask::{
    ebpf,
    process::{Output, run},
};

/// The crates built for the host (every workspace member but the eBPF crate).
const HOST: [&str; 7] = [
    "lifeline",
    "lifeline-common",
    crate::purity::JUDGE,
    "lifeline-tests",
    "lifeline-bench",
    "lifeline-docgen",
    "xtask",
];

/// # Errors
/// The first gate that fails, named.
pub(crate) fn lint(ws: &Path) -> Result<()> {
    let cargo = || {
        let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        c.current_dir(ws);
        c
    };
    // The pinned nightly first (a no-op when set up): its rustfmt applies rustfmt.toml's
    // import groups, which stable rustfmt only warns about; the host clippy pass runs the
    // agent's build script, which needs that toolchain and bpf-linker too.
    let tc = xtask::setup::setup()?.toolchain;
    tc.ensure_rustfmt()?;
    let mut fmt = tc.run("cargo");
    fmt.current_dir(ws).args(["fmt", "--all", "--check"]);
    run(
        "cargo fmt --check (pinned nightly)",
        &mut fmt,
        Output::Inherit,
    )?;
    crate::gofixture::check_format(ws)?;
    // Reads sources only: seconds, so before the builds as well.
    crate::imports::check(ws)?;
    crate::layout::check(ws)?;
    crate::lab_tree::check(ws)?;
    // Reads the dependency graph only: seconds too.
    crate::purity::check(ws)?;
    let mut host = cargo();
    host.arg("clippy");
    for p in HOST {
        host.args(["-p", p]);
    }
    host.args(["--all-targets", "--", "-D", "warnings"]);
    run("clippy (host crates)", &mut host, Output::Inherit)?;
    let mut doc = cargo();
    doc.args(["doc", "--no-deps", "--document-private-items"])
        .env("RUSTDOCFLAGS", "-D warnings");
    for p in HOST {
        doc.args(["-p", p]);
    }
    run("cargo doc (host crates)", &mut doc, Output::Inherit)?;

    tc.ensure_clippy()?;
    let mut bpf = tc.run("cargo");
    bpf.current_dir(ws)
        .args([
            "clippy",
            "--package",
            ebpf::PACKAGE,
            "--target",
            ebpf::TARGET,
        ])
        .args(["-Z", "build-std=core", "--target-dir"])
        .arg(ws.join("target").join("ebpf-clippy"))
        .args(["--", "-D", "warnings"]);
    run("clippy (eBPF crate)", &mut bpf, Output::Inherit)?;
    crate::deny::check(ws)
}
