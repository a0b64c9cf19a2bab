//! `cargo xtask image`: the container image, `target/image/lifeline-<version>.oci.tar`, for
//! amd64 and arm64 (`arch.rs`). The agent built for musl is one static file (the eBPF object
//! is embedded by its build script), so each image is that file and nothing else, assembled
//! into one multi-arch archive by `oci.rs`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};
use xtask::process::{Output, capture, run};

use crate::{
    Phases,
    arch::{self, Arch},
    cargo_run, oci,
};

/// Builds the image and returns the archive's path.
pub(crate) fn image(ws: &Path, phases: &mut Phases) -> Result<PathBuf> {
    crate::build_ebpf(ws, phases)?;
    let image = build(ws, phases)?;
    let size = std::fs::metadata(&image.archive)?.len();
    let layers: Vec<String> = (image.layers.iter())
        .map(|(a, n)| format!("{a} {} KiB", n / 1024))
        .collect();
    eprintln!(
        "xtask: image {} (index sha256:{}; compressed layers {}; {} KiB archive): {}",
        image.name,
        image.index,
        layers.join(", "),
        size / 1024,
        image.archive.display()
    );
    println!("{}", image.archive.display());
    Ok(image.archive)
}

/// The static binary of every architecture and the archive, once the eBPF object is built
/// (also for the lab's container test, which loads the same archive an operator would).
pub(crate) fn build(ws: &Path, phases: &mut Phases) -> Result<oci::Image> {
    phases.run("cross tools", crate::packages::ensure_cross)?;
    let mut bins = Vec::new();
    for a in arch::ALL {
        let bin = phases.run(a.phase, || release_musl(ws, a))?;
        runs(ws, a, &bin)?;
        bins.push((a, bin));
    }
    phases.run("image", || oci::assemble(ws, &bins))
}

/// `cargo build --release --target <triple> -p lifeline` (adding the target to the toolchain
/// first when missing); the path of the static binary.
pub(crate) fn release_musl(ws: &Path, arch: &Arch) -> Result<PathBuf> {
    let musl = arch.triple;
    let installed = capture(
        "listing the toolchain's targets",
        Command::new("rustup")
            .current_dir(ws)
            .args(["target", "list", "--installed"]),
    )?;
    if !installed.lines().any(|l| l.trim() == musl) {
        run(
            &format!("adding the {musl} target"),
            Command::new("rustup")
                .current_dir(ws)
                .args(["target", "add", musl]),
            Output::Inherit,
        )?;
    }
    let args = ["build", "--release", "-p", "lifeline", "--target", musl];
    cargo_run::cargo(ws, &format!("building lifeline for {musl}"), &args)?;
    let bin = cargo_run::target_dir(ws)?
        .join(musl)
        .join("release/lifeline");
    if has_interpreter(&bin)? {
        bail!(
            "{} is dynamically linked; the image has no libc for it",
            bin.display()
        );
    }
    Ok(bin)
}

/// The binary starts and names itself (`lifeline <version>`), on this host natively or under
/// qemu's user-mode emulator: a cross build that links but cannot run fails here, not on a node.
fn runs(ws: &Path, arch: &Arch, bin: &Path) -> Result<()> {
    let mut cmd = match arch.emulator {
        Some((qemu, _)) => {
            let mut c = Command::new(qemu);
            c.arg(bin);
            c
        }
        None => Command::new(bin),
    };
    let out = capture(
        &format!("running the {} binary", arch.name),
        cmd.arg("--version"),
    )?;
    let want = format!("lifeline {}", crate::meta::Meta::read(ws)?.version);
    if out.trim() != want {
        bail!(
            "the {} binary {} printed {:?} for --version, not {want:?}",
            arch.name,
            bin.display(),
            out.trim()
        );
    }
    eprintln!("xtask: {} binary: {want}", arch.name);
    Ok(())
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
