//! bpf-linker, built against the pinned toolchain's own LLVM.
//!
//! No prebuilt bpf-linker can be downloaded on our machines and there is no system LLVM 22, but
//! rustup ships LLVM as a shared library in the sysroot. bpf-linker's build accepts an
//! `LLVM_PREFIX` holding `lib/libLLVM.so`, and the binary it produces finds the library again
//! through a RUNPATH pointing at `<prefix>/lib`, so the prefix lives in the cache, not in /tmp.

use std::{
    env, fs, io,
    os::unix::fs::symlink,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context as _, Result, anyhow};

use crate::{
    cache_dir, cargo_home, install,
    toolchain::{Missing, TOOLCHAIN, Toolchain},
};

/// Pinned: with `--locked` this makes the install reproducible, and a future release may drop
/// the `llvm-22` feature we need.
pub const BPF_LINKER_VERSION: &str = "0.13.0";

/// Returns the directory of a working bpf-linker, building one first when there is none on PATH
/// or in cargo's install root (`cargo xtask setup`, never a build script). rustc finds the
/// linker by name on PATH, so the eBPF build puts this directory first on it.
///
/// # Errors
/// When the toolchain ships no libLLVM, or building bpf-linker fails.
pub fn ensure(tc: &Toolchain) -> Result<PathBuf> {
    // Refresh the prefix first, even when bpf-linker exists: a linker built earlier needs it to
    // start at all, and one built against another toolchain's LLVM then fails to start (its
    // libLLVM soname is gone) and is rebuilt, instead of misreading newer bitcode.
    let (prefix, llvm_major) = llvm_prefix(&tc.sysroot)?;
    if let Some(dir) = working_dir() {
        return Ok(dir);
    }
    let root = install_root();
    let mut cmd = tc.run("cargo");
    cmd.args([
        "install",
        "bpf-linker",
        "--version",
        BPF_LINKER_VERSION,
        "--locked",
        "--force",
    ]);
    let feature = format!("llvm-{llvm_major}");
    cmd.args(["--no-default-features", "--features", &feature]);
    // --root: install exactly where we look (an install.root config would send it elsewhere).
    cmd.arg("--root").arg(&root).env("LLVM_PREFIX", &prefix);
    let log = install("building bpf-linker", "bpf-linker-install.log", &mut cmd)?;
    let exe = root.join("bin/bpf-linker");
    if !runs(&exe) {
        return Err(anyhow!(
            "building bpf-linker failed: {} was installed but does not start; see {}",
            exe.display(),
            log.display()
        ));
    }
    Ok(root.join("bin"))
}

/// The directory of a working bpf-linker as [`ensure`] left it, changing nothing: what the
/// build script uses. The LLVM prefix must point at `tc`'s own library (else the linker was
/// set up for another toolchain and could misread its bitcode) and a bpf-linker must start.
///
/// # Errors
/// [`Missing`] naming what is not set up; or when the toolchain has no libLLVM.
pub fn find(tc: &Toolchain) -> Result<PathBuf> {
    let lib = tc.sysroot.join("lib");
    let name = llvm_library(&lib)?;
    let links = cache_dir()?.join("llvm-prefix").join("lib");
    let target = lib.join(&name);
    let current = ["libLLVM.so", name.as_str()]
        .iter()
        .all(|link| fs::read_link(links.join(link)).is_ok_and(|t| t == target));
    match (current, working_dir()) {
        (true, Some(dir)) => Ok(dir),
        (true, None) => Err(Missing(vec![missing_linker()]).into()),
        (false, _) => Err(Missing(vec![format!(
            "{} linked against {TOOLCHAIN}'s LLVM (in {})",
            missing_linker(),
            links.display()
        )])
        .into()),
    }
}

/// How the one error line names a missing bpf-linker.
#[must_use]
pub fn missing_linker() -> String {
    format!("bpf-linker {BPF_LINKER_VERSION}")
}

/// The first directory, PATH then cargo's install root, with a bpf-linker that starts.
#[must_use]
pub fn working_dir() -> Option<PathBuf> {
    let path_dirs: Vec<PathBuf> = env::var_os("PATH")
        .map(|p| env::split_paths(&p).collect())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain([install_root().join("bin")])
        .find(|dir| runs(&dir.join("bpf-linker")))
}

/// The real file of the toolchain's LLVM: the glob libLLVM.so.* (libLLVM-22-….so is a linker
/// script pointing at it), its version not hard-coded so a new pin just works.
fn llvm_library(lib: &Path) -> Result<String> {
    let step = "preparing LLVM for bpf-linker";
    let found = fs::read_dir(lib)
        .with_context(|| format!("{step} failed: cannot read {}", lib.display()))?;
    found
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|n| n.starts_with("libLLVM.so."))
        .ok_or_else(|| anyhow!("{step} failed: {TOOLCHAIN} has no libLLVM.so.* in {}; reinstall it with `rustup toolchain uninstall {TOOLCHAIN}` and `cargo xtask setup`", lib.display()))
}

/// Links `<cache>/llvm-prefix/lib/{libLLVM.so, libLLVM.so.<version>}` to the toolchain's
/// library and returns the prefix with the LLVM major version (bpf-linker's `llvm-N` feature).
fn llvm_prefix(sysroot: &Path) -> Result<(PathBuf, u32)> {
    let step = "preparing LLVM for bpf-linker";
    let lib = sysroot.join("lib");
    let name = llvm_library(&lib)?;
    let major =
        llvm_major(&name).ok_or_else(|| anyhow!("{step} failed: no LLVM version in {name}"))?;

    let prefix = cache_dir()?.join("llvm-prefix");
    let links = prefix.join("lib");
    let fail = |e: io::Error| anyhow!("{step} failed: {}: {e}", links.display());
    fs::create_dir_all(&links).map_err(fail)?;
    for entry in fs::read_dir(&links).map_err(fail)?.filter_map(Result::ok) {
        let stale = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with("libLLVM.so.") && n != name);
        if stale {
            fs::remove_file(entry.path()).map_err(fail)?;
        }
    }
    for link in ["libLLVM.so", name.as_str()] {
        replace_symlink(&lib.join(&name), &links.join(link)).map_err(fail)?;
    }
    Ok((prefix, major))
}

/// `libLLVM.so.22.1-rust-1.97.0-nightly` -> 22.
fn llvm_major(file_name: &str) -> Option<u32> {
    let version = file_name.strip_prefix("libLLVM.so.")?;
    version.split(['.', '-']).next()?.parse().ok()
}

/// Points `link` at `target` by renaming a fresh link over it, so a bpf-linker running in
/// another build never sees the library missing.
fn replace_symlink(target: &Path, link: &Path) -> io::Result<()> {
    if fs::read_link(link).is_ok_and(|current| current == target) {
        return Ok(());
    }
    let tmp = link.with_file_name(format!(".tmp-link-{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    symlink(target, &tmp)?;
    fs::rename(&tmp, link)
}

/// Where `cargo install` puts binaries unless told otherwise: `$CARGO_INSTALL_ROOT`, else
/// `$CARGO_HOME` (~/.cargo), with `bin/` under it.
fn install_root() -> PathBuf {
    env::var_os("CARGO_INSTALL_ROOT")
        .filter(|v| !v.is_empty())
        .map_or_else(cargo_home, PathBuf::from)
}

/// A bpf-linker that exists but cannot load its libLLVM is as good as none.
fn runs(exe: &Path) -> bool {
    exe.is_file()
        && Command::new(exe)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_llvm_major_from_the_library_name() {
        assert_eq!(
            super::llvm_major("libLLVM.so.22.1-rust-1.97.0-nightly"),
            Some(22)
        );
        assert_eq!(
            super::llvm_major("libLLVM.so.23-rust-1.99.0-nightly"),
            Some(23)
        );
        assert_eq!(super::llvm_major("libLLVM.so.x"), None);
    }
}
