//! `cargo xtask image`: the container image, `target/image/lifeline-<version>.oci.tar`. The
//! agent built for musl is one static file (the eBPF object is embedded by its build
//! script), so the image is that file and nothing else, assembled by `oci.rs`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};
use xtask::process::{Output, capture, run};

use crate::{Phases, cargo_run, oci};

/// The one target the image is built for: static, no libc needed at run time.
pub const MUSL: &str = "x86_64-unknown-linux-musl";

/// Builds the image and returns the archive's path.
pub fn image(ws: &Path, phases: &mut Phases) -> Result<PathBuf> {
    crate::build_ebpf(ws, phases)?;
    let bin = phases.run("musl build", || release_musl(ws))?;
    let image = phases.run("image", || oci::assemble(ws, &bin))?;
    let size = std::fs::metadata(&image.archive)?.len();
    eprintln!(
        "xtask: image {} ({} KiB compressed layer, {} KiB archive): {}",
        image.name,
        image.layer_size / 1024,
        size / 1024,
        image.archive.display()
    );
    println!("{}", image.archive.display());
    Ok(image.archive)
}

/// `cargo build --release --target x86_64-unknown-linux-musl -p lifeline` (adding the target
/// to the toolchain first when missing); the path of the static binary.
pub fn release_musl(ws: &Path) -> Result<PathBuf> {
    let installed = capture(
        "listing the toolchain's targets",
        Command::new("rustup")
            .current_dir(ws)
            .args(["target", "list", "--installed"]),
    )?;
    if !installed.lines().any(|l| l.trim() == MUSL) {
        run(
            &format!("adding the {MUSL} target"),
            Command::new("rustup")
                .current_dir(ws)
                .args(["target", "add", MUSL]),
            Output::Inherit,
        )?;
    }
    let args = ["build", "--release", "-p", "lifeline", "--target", MUSL];
    cargo_run::cargo(ws, "building lifeline for musl", &args)?;
    let bin = cargo_run::target_dir(ws)?
        .join(MUSL)
        .join("release/lifeline");
    if has_interpreter(&bin)? {
        bail!(
            "{} is dynamically linked; the image has no libc for it",
            bin.display()
        );
    }
    Ok(bin)
}

/// Whether an ELF64 executable asks for a program interpreter (`PT_INTERP`): a static
/// binary, even a static PIE, does not.
fn has_interpreter(bin: &Path) -> Result<bool> {
    const PT_INTERP: u64 = 3;
    let elf = std::fs::read(bin).with_context(|| format!("reading {}", bin.display()))?;
    let word = |at: usize, n: usize| -> Option<u64> {
        let b = elf.get(at..at + n)?;
        Some(b.iter().rev().fold(0, |acc, &x| (acc << 8) | u64::from(x)))
    };
    let header = (|| {
        (elf.get(..5)? == b"\x7fELF\x02").then_some(())?;
        let phoff = usize::try_from(word(0x20, 8)?).ok()?;
        let phentsize = usize::try_from(word(0x36, 2)?).ok()?;
        let phnum = usize::try_from(word(0x38, 2)?).ok()?;
        Some((phoff, phentsize, phnum))
    })();
    let Some((phoff, size, count)) = header else {
        bail!("{} is not a 64-bit ELF executable", bin.display());
    };
    Ok((0..count).any(|i| word(phoff + i * size, 4) == Some(PT_INTERP)))
}
