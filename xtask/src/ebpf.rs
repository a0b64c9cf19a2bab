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
    toolchain::{self, Missing},
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
/// (`<workspace>/target/ebpf/bpfel-unknown-none/release/lifeline`) with what is installed:
/// it installs nothing and uses no network beyond what cargo does for the eBPF crate itself
/// (`cargo xtask setup` installs the pinned toolchain, its rust-src and bpf-linker).
///
/// Always runs cargo, whose own fingerprints decide what to rebuild: the returned object is
/// never older than the sources. Safe to call from a build script.
///
/// # Errors
/// One line naming the failed step (compiler output, if any, has gone to stderr already), or
/// what is missing and `cargo xtask setup`.
pub fn build(workspace: &Path) -> Result<PathBuf> {
    let tc = match toolchain::find() {
        Ok(tc) => tc,
        Err(err) => return Err(with_linker_missing(err)),
    };
    let linker_dir = linker::find(&tc)?;
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

/// Without the toolchain the linker cannot be checked against its LLVM, but a missing linker
/// is still named, so one `cargo xtask setup` is known to be the whole fix.
fn with_linker_missing(err: anyhow::Error) -> anyhow::Error {
    match err.downcast::<Missing>() {
        Ok(mut missing) => {
            if linker::working_dir().is_none() {
                missing.0.push(linker::missing_linker());
            }
            missing.into()
        }
        Err(err) => err,
    }
}

fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// The environment variable that skips the eBPF build (for `cargo check`/clippy on a machine
/// without the nightly): `1` skips, unset, empty or `0` builds.
pub const SKIP_ENV: &str = "LIFELINE_SKIP_EBPF";

/// The whole of a `build.rs` that embeds the object: builds it with [`build`], copies it to
/// `$OUT_DIR/lifeline.bpf.o`, sets `LIFELINE_EBPF_OBJECT` to that path for the crate, and asks
/// cargo to rerun when the eBPF crate, the shared crate, the workspace manifest/lock or
/// [`SKIP_ENV`] change (changes to xtask itself rerun it anyway: it is a build-dependency).
/// Under `LIFELINE_SKIP_EBPF=1` the copy is an empty file, which the agent refuses to load.
///
/// On failure it prints the one-line error as a cargo error, so build.rs does not need to
/// handle anything.
pub fn build_script() {
    if let Err(err) = try_build_script() {
        // `cargo::error` fails the build with this line alone; exiting non-zero as well would
        // add cargo's dump of everything the script printed.
        println!("cargo::error={err:#}");
    }
}

fn try_build_script() -> Result<()> {
    let var = |name: &str| {
        env::var_os(name).map(PathBuf::from).ok_or_else(|| {
            anyhow!("{name} is not set; xtask::ebpf::build_script() must run from a build script")
        })
    };
    let (manifest_dir, out_dir) = (var("CARGO_MANIFEST_DIR")?, var("OUT_DIR")?);
    println!("cargo::rerun-if-env-changed={SKIP_ENV}");
    let copy = out_dir.join(OBJECT_NAME);
    if skip(env::var_os(SKIP_ENV).as_deref())? {
        println!("cargo::warning={SKIP_ENV}=1: this lifeline embeds no eBPF object and cannot run");
        fs::write(&copy, []).with_context(|| format!("writing {} failed", copy.display()))?;
        println!("cargo::rustc-env={OBJECT_ENV}={}", copy.display());
        return Ok(());
    }
    let workspace = crate::workspace_root(&manifest_dir)?;
    for input in rerun_inputs(&workspace) {
        println!("cargo::rerun-if-changed={}", input.display());
    }
    let object = build(&workspace)?;
    fs::copy(&object, &copy)
        .with_context(|| format!("copying {} to {} failed", object.display(), copy.display()))?;
    println!("cargo::rustc-env={OBJECT_ENV}={}", copy.display());
    Ok(())
}

/// Reads [`SKIP_ENV`]: a typo must not silently build (or skip), so other values are an error.
fn skip(value: Option<&std::ffi::OsStr>) -> Result<bool> {
    match value.map(|v| v.to_str()) {
        None | Some(Some("" | "0")) => Ok(false),
        Some(Some("1")) => Ok(true),
        Some(other) => bail!(
            "{SKIP_ENV} must be 1 (skip the eBPF build) or 0/unset, got {:?}",
            other.unwrap_or("(not UTF-8)")
        ),
    }
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

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::skip;
    use crate::toolchain::Missing;

    #[test]
    fn the_skip_switch_is_1_and_nothing_else_is_guessed() {
        assert!(!skip(None).unwrap());
        assert!(!skip(Some(OsStr::new(""))).unwrap());
        assert!(!skip(Some(OsStr::new("0"))).unwrap());
        assert!(skip(Some(OsStr::new("1"))).unwrap());
        let err = skip(Some(OsStr::new("yes"))).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "LIFELINE_SKIP_EBPF must be 1 (skip the eBPF build) or 0/unset, got \"yes\""
        );
    }

    #[test]
    fn what_is_missing_is_one_line_naming_setup() {
        let missing = Missing(vec![
            "the toolchain nightly-2026-05-20 (with rust-src)".into(),
            "bpf-linker 0.13.0".into(),
        ]);
        let line = anyhow::Error::from(missing).to_string();
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.starts_with(
                "missing for the eBPF build: the toolchain nightly-2026-05-20 (with rust-src) and bpf-linker 0.13.0; run `cargo xtask setup`"
            ),
            "{line}"
        );
    }
}
