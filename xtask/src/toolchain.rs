//! The pinned nightly the eBPF crate is built with: found by every build ([`find`]), installed
//! only by `cargo xtask setup` ([`ensure`]).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, bail};

use crate::{cargo_home, install, process::capture, which};

/// Pinned rather than plain `nightly` so an eBPF object builds the same everywhere; its LLVM
/// (22) is the one bpf-linker gets built against.
pub const TOOLCHAIN: &str = "nightly-2026-05-20";

/// The installed pinned toolchain.
pub struct Toolchain {
    pub rustup: PathBuf,
    /// `rustc --print sysroot`: holds `lib/libLLVM.so.*` and `lib/rustlib/src` (rust-src).
    pub sysroot: PathBuf,
}

impl Toolchain {
    /// Adds clippy to the pinned toolchain unless it has it (for the eBPF crate's lint pass).
    ///
    /// # Errors
    /// When the install fails.
    pub fn ensure_clippy(&self) -> Result<()> {
        if self.sysroot.join("bin").join("clippy-driver").is_file() {
            return Ok(());
        }
        self.add_component("clippy")
    }

    /// Adds rustfmt to the pinned toolchain unless it has it: `rustfmt.toml` groups imports,
    /// an option only a nightly rustfmt applies (the formatting gate in `lint.rs`).
    ///
    /// # Errors
    /// When the install fails.
    pub fn ensure_rustfmt(&self) -> Result<()> {
        if self.sysroot.join("bin").join("rustfmt").is_file() {
            return Ok(());
        }
        self.add_component("rustfmt")
    }

    /// `rustup component add` for the pinned toolchain, logged like any one-time install.
    fn add_component(&self, component: &str) -> Result<()> {
        let mut cmd = Command::new(&self.rustup);
        cmd.args(["component", "add", component, "--toolchain", TOOLCHAIN]);
        let step = format!("adding {component} to {TOOLCHAIN}");
        install(&step, &format!("{component}-install.log"), &mut cmd).map(drop)
    }

    fn has_rust_src(&self) -> bool {
        self.sysroot
            .join("lib/rustlib/src/rust/library/core")
            .is_dir()
    }

    /// `rustup run <TOOLCHAIN> <program>`, with the environment of any outer cargo removed.
    #[must_use]
    pub fn run(&self, program: &str) -> Command {
        let mut cmd = Command::new(&self.rustup);
        cmd.args(["run", TOOLCHAIN, program]);
        crate::cargo_env::scrub(&mut cmd);
        cmd
    }
}

/// Makes sure the pinned toolchain and its rust-src (needed by `-Z build-std=core`) are
/// installed: `cargo xtask setup`, never a build script. `RUSTUP_AUTO_INSTALL=0` on our
/// machines, so nothing installs it implicitly.
///
/// # Errors
/// When rustup is missing or an install fails.
pub fn ensure() -> Result<Toolchain> {
    let rustup = rustup_path();
    if !installed(&rustup)? {
        // --no-self-update: installing a toolchain must not replace rustup itself.
        let mut cmd = Command::new(&rustup);
        cmd.args(["toolchain", "install", TOOLCHAIN, "--no-self-update"]);
        cmd.args(["--profile", "minimal", "--component", "rust-src"]);
        let step = format!("installing toolchain {TOOLCHAIN}");
        install(&step, "toolchain-install.log", &mut cmd)?;
    }
    let tc = with_sysroot(rustup)?;
    if !tc.has_rust_src() {
        tc.add_component("rust-src")?;
    }
    if !tc.has_rust_src() {
        // rustup goes by its component list, not the files: to it a deleted source tree is
        // "up to date", and it cannot remove the component either.
        bail!(
            "adding rust-src to {TOOLCHAIN} failed: rustup lists it but {} is missing; reinstall \
             the toolchain: rustup toolchain uninstall {TOOLCHAIN} && cargo xtask setup",
            tc.sysroot
                .join("lib/rustlib/src/rust/library/core")
                .display()
        );
    }
    Ok(tc)
}

/// The pinned toolchain as installed, changing nothing: what the build script uses.
///
/// # Errors
/// [`Missing`] (as the error's root) when the toolchain or its rust-src is not installed;
/// otherwise when rustup cannot be asked.
pub fn find() -> Result<Toolchain> {
    let rustup = rustup_path();
    if !installed(&rustup)? {
        return Err(Missing(vec![format!("the toolchain {TOOLCHAIN} (with rust-src)")]).into());
    }
    let tc = with_sysroot(rustup)?;
    if !tc.has_rust_src() {
        return Err(Missing(vec![format!("rust-src of {TOOLCHAIN}")]).into());
    }
    Ok(tc)
}

/// What the eBPF build lacks, each item named for the one line the build script prints.
#[derive(Debug)]
pub struct Missing(pub Vec<String>);

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "missing for the eBPF build: {}; run `cargo xtask setup` (it installs the pinned \
             nightly, rust-src and bpf-linker), or set LIFELINE_SKIP_EBPF=1 for cargo check/clippy",
            self.0.join(" and ")
        )
    }
}

impl std::error::Error for Missing {}

fn installed(rustup: &Path) -> Result<bool> {
    let list = capture(
        "listing rustup toolchains",
        Command::new(rustup).args(["toolchain", "list"]),
    )?;
    Ok(lists_toolchain(&list))
}

fn with_sysroot(rustup: PathBuf) -> Result<Toolchain> {
    let mut tc = Toolchain {
        rustup,
        sysroot: PathBuf::new(),
    };
    let mut cmd = tc.run("rustc");
    let sysroot = capture(
        &format!("asking {TOOLCHAIN} for its sysroot"),
        cmd.args(["--print", "sysroot"]),
    )?;
    tc.sysroot = PathBuf::from(sysroot);
    Ok(tc)
}

/// `rustup toolchain list` prints full names (`nightly-2026-05-20-x86_64-unknown-linux-gnu`),
/// possibly followed by `(active, default)`.
fn lists_toolchain(list: &str) -> bool {
    let host_suffixed = format!("{TOOLCHAIN}-");
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .any(|name| {
            name == TOOLCHAIN
                || name
                    .strip_prefix(&host_suffixed)
                    .is_some_and(|host| host.contains("-unknown-"))
        })
}

/// rustup from PATH, else where rustup-init puts it: a build script may run with a PATH that
/// only has the toolchain's own bin directory.
fn rustup_path() -> PathBuf {
    which("rustup").unwrap_or_else(|| cargo_home().join("bin/rustup"))
}

#[cfg(test)]
mod tests {
    use super::{TOOLCHAIN, lists_toolchain};

    #[test]
    fn the_ebpf_crates_toolchain_file_names_the_pinned_nightly() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../agent-ebpf/rust-toolchain.toml");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.lines()
                .any(|l| l.trim() == format!("channel = \"{TOOLCHAIN}\"")),
            "{} does not pin {TOOLCHAIN}",
            file.display()
        );
    }

    #[test]
    fn finds_the_pinned_toolchain_in_rustup_output() {
        let list = "stable-x86_64-unknown-linux-gnu (active, default)\n\
                    nightly-2026-05-20-x86_64-unknown-linux-gnu\n";
        assert!(lists_toolchain(list));
        assert!(!lists_toolchain(
            "nightly-x86_64-unknown-linux-gnu\nno installed toolchains"
        ));
        assert!(!lists_toolchain(
            "nightly-2026-05-200-x86_64-unknown-linux-gnu"
        ));
    }
}
