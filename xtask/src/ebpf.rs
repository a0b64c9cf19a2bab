//! The one routine that builds the eBPF object, and the build-script wrapper around it.

use std::{
    env, fs,
    io::Read as _,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, anyhow, bail};

use crate::{
    linker,
    process::{Output, run},
    toolchain,
};

/// The eBPF crate, its only target triple and the name of its binary (the object).
pub const PACKAGE: &str = "agent-ebpf";
pub const TARGET: &str = "bpfel-unknown-none";
pub const BIN: &str = "lifeline";
/// What [`build_script`] names its copy of the object in `OUT_DIR`.
pub const OBJECT_NAME: &str = "lifeline.bpf.o";
/// The env var [`build_script`] sets for the crate being built: the object's absolute path.
pub const OBJECT_ENV: &str = "LIFELINE_EBPF_OBJECT";

/// Builds the eBPF object from the workspace at `workspace` and returns its path
/// (`<workspace>/target/ebpf/bpfel-unknown-none/release/lifeline`). Installs the pinned
/// toolchain, its rust-src and bpf-linker first when they are missing.
///
/// Always runs cargo, whose own fingerprints decide what to rebuild: the returned object is
/// never older than the sources. Safe to call from a build script.
///
/// # Errors
/// One line naming the failed step (compiler output, if any, has gone to stderr already).
pub fn build(workspace: &Path) -> Result<PathBuf> {
    let tc = toolchain::ensure()?;
    let linker_dir = linker::ensure(&tc)?;
    // Its own target dir: the outer cargo of a build script holds the lock on its own, and the
    // nightly's artifacts must not mix with stable's. Shared by xtask and build.rs, so the
    // object is compiled once.
    let target_dir = workspace.join("target").join("ebpf");
    let mut path = vec![linker_dir];
    path.extend(
        env::var_os("PATH")
            .map(|p| env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default(),
    );

    let mut cmd = tc.run("cargo");
    cmd.current_dir(workspace)
        .args([
            "build",
            "--package",
            PACKAGE,
            "--release",
            "--target",
            TARGET,
        ])
        .args(["-Z", "build-std=core", "--target-dir"])
        .arg(&target_dir)
        // Set as a whole (it overrides RUSTFLAGS and every config): BTF for CO-RE and for
        // readable verifier logs; debuginfo is what bpf-linker turns into BTF.
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            "-Cdebuginfo=2\x1f-Clink-arg=--btf",
        )
        .env("PATH", env::join_paths(path)?);
    let step = format!("building the eBPF program ({PACKAGE})");
    run(&step, &mut cmd, Output::Stderr("; see the compiler output"))?;

    let object = target_dir.join(TARGET).join("release").join(BIN);
    if !is_elf(&object) {
        bail!(
            "{step} failed: cargo succeeded but {} is missing or not an ELF object; does {PACKAGE} have a [[bin]] named {BIN}?",
            object.display()
        );
    }
    Ok(object)
}

fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// The whole of a `build.rs` that embeds the object: builds it with [`build`], copies it to
/// `$OUT_DIR/lifeline.bpf.o`, sets `LIFELINE_EBPF_OBJECT` to that path for the crate, and asks
/// cargo to rerun when the eBPF crate, the shared crate or the workspace manifest/lock change
/// (changes to xtask itself rerun it anyway: it is a build-dependency).
///
/// On failure it prints the one-line error as a cargo error and exits 1, so build.rs does not
/// need to handle anything.
pub fn build_script() {
    if let Err(err) = try_build_script() {
        println!("cargo::error=xtask: {err:#}");
        eprintln!("xtask: error: {err:#}");
        std::process::exit(1);
    }
}

fn try_build_script() -> Result<()> {
    let var = |name: &str| {
        env::var_os(name).map(PathBuf::from).ok_or_else(|| {
            anyhow!("{name} is not set; xtask::ebpf::build_script() must run from a build script")
        })
    };
    let (manifest_dir, out_dir) = (var("CARGO_MANIFEST_DIR")?, var("OUT_DIR")?);
    let workspace = crate::workspace_root(&manifest_dir)?;
    for input in rerun_inputs(&workspace) {
        println!("cargo::rerun-if-changed={}", input.display());
    }
    let object = build(&workspace)?;
    let copy = out_dir.join(OBJECT_NAME);
    fs::copy(&object, &copy)
        .with_context(|| format!("copying {} to {} failed", object.display(), copy.display()))?;
    println!("cargo::rustc-env={OBJECT_ENV}={}", copy.display());
    Ok(())
}

/// What the object is made from, for `cargo::rerun-if-changed` (directories are scanned
/// recursively). Only existing paths: cargo reruns every time for a missing one.
#[must_use]
pub fn rerun_inputs(workspace: &Path) -> Vec<PathBuf> {
    [
        "agent-ebpf",
        "common",
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
    ]
    .iter()
    .map(|p| workspace.join(p))
    .filter(|p| p.exists())
    .collect()
}
