//! The matrix's kernels: the package a series' metapackage depends on now, downloaded with
//! `apt-get download` (never installed) and prepared once into the cache
//! (`~/.cache/lifeline/kernels/<release>/`): vmlinuz and the module tree, decompressed
//! (busybox's modprobe in the initramfs loads plain `.ko` only) and indexed with depmod
//! (the .deb ships no modules.dep). bullseye's 5.10 comes through a private apt
//! configuration (apt.rs), so the host's own apt state is never touched.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};
use xtask::process::{Output, capture, run};

use super::{Series, apt::Apt, initrd};

pub(super) struct Kernel {
    pub series: &'static Series,
    /// `5.10.0-46-cloud-amd64`.
    pub release: String,
    /// The Debian package version, `5.10.262-1`.
    pub version: String,
    /// In the cache: `vmlinuz`, `lib/modules/<release>`.
    pub dir: PathBuf,
    /// In this workspace's target directory (rebuilt every run).
    pub initrd: PathBuf,
}

/// The kernels of `series`; their initramfs goes into `work`.
///
/// # Errors
/// When apt cannot name, download or unpack a kernel.
pub(super) fn kernels(series: &[&'static Series], work: &Path) -> Result<Vec<Kernel>> {
    let cache = xtask::cache_dir()?.join("kernels");
    let debs = cache.join("debs");
    fs::create_dir_all(&debs).with_context(|| format!("cannot create {}", debs.display()))?;
    let mut out = Vec::new();
    for s in series {
        let apt = Apt::new(s, &cache)?;
        let mut package = apt.kernel_package(s.meta)?;
        let mut dir = cache.join(package.trim_start_matches("linux-image-"));
        if !dir.join("ready").is_file() {
            // Lists older than the archive name a kernel it no longer has: update, once.
            let deb = match apt.download(&package, &debs) {
                Ok(deb) => deb,
                Err(e) => {
                    eprintln!("xtask: {e:#}; updating the package lists and retrying");
                    apt.update()?;
                    package = apt.kernel_package(s.meta)?;
                    dir = cache.join(package.trim_start_matches("linux-image-"));
                    apt.download(&package, &debs)?
                }
            };
            let release = package.trim_start_matches("linux-image-");
            let version = deb_version(&deb).unwrap_or_default();
            prepare(&deb, release, &version, &dir)?;
        }
        let release = package.trim_start_matches("linux-image-").to_owned();
        let version = fs::read_to_string(dir.join("ready"))?.trim().to_owned();
        let initrd = work.join(format!("{release}.initrd.gz"));
        // arm64's initramfs carries its own userland and is built when it boots (arm64.rs).
        if s.arch.name == "amd64" {
            initrd::build(&dir, &release, &initrd)?;
        }
        eprintln!("xtask: kernel {} is {release} ({version})", s.name);
        out.push(Kernel {
            series: s,
            release,
            version,
            dir,
            initrd,
        });
    }
    Ok(out)
}

/// `pkg_1.2-3_amd64.deb` -> `1.2-3`.
fn deb_version(deb: &Path) -> Option<String> {
    let name = deb.file_name()?.to_str()?;
    Some(name.split('_').nth(1)?.to_owned())
}

/// vmlinuz and the module tree out of the .deb, modules decompressed and indexed, staged
/// beside `dir` and renamed into place whole: a concurrent run (another worktree) preparing
/// the same kernel never sees half a tree.
fn prepare(deb: &Path, release: &str, version: &str, dir: &Path) -> Result<()> {
    let step = format!("unpacking {}", deb.display());
    let stage = dir.with_file_name(format!(".{release}.{}", std::process::id()));
    if stage.exists() {
        fs::remove_dir_all(&stage)?;
    }
    fs::create_dir_all(&stage)?;
    let unpacked = stage.join("deb");
    let mut x = Command::new("dpkg-deb");
    x.arg("-x").arg(deb).arg(&unpacked);
    run(&step, &mut x, Output::Stderr(""))?;
    let modules = stage.join("lib/modules");
    fs::create_dir_all(&modules)?;
    fs::rename(
        unpacked.join(format!("boot/vmlinuz-{release}")),
        stage.join("vmlinuz"),
    )
    .with_context(|| format!("{step}: no boot/vmlinuz-{release} in it"))?;
    fs::rename(
        unpacked.join("lib/modules").join(release),
        modules.join(release),
    )
    .with_context(|| format!("{step}: no lib/modules/{release} in it"))?;
    fs::remove_dir_all(&unpacked)?;
    decompress(&step, &modules)?;
    let mut depmod = Command::new("depmod");
    depmod.arg("-b").arg(&stage).arg(release);
    run(
        "indexing the kernel's modules (depmod)",
        &mut depmod,
        Output::Stderr(""),
    )?;
    fs::write(stage.join("ready"), format!("{version}\n"))?;
    if dir.exists() && !dir.join("ready").is_file() {
        // Left by an interrupted run of an older xtask.
        fs::remove_dir_all(dir)?;
    }
    if fs::rename(&stage, dir).is_err() {
        // Another run put the same kernel in place first: use that one.
        fs::remove_dir_all(&stage)?;
        if !dir.join("ready").is_file() {
            bail!("{step} failed: cannot move it to {}", dir.display());
        }
    }
    Ok(())
}

/// `.ko.xz`/`.ko.zst` -> `.ko`: busybox's modprobe in the initramfs loads plain ones only.
fn decompress(step: &str, modules: &Path) -> Result<()> {
    for (ext, tool, args) in [
        ("xz", "xz", &["-d"][..]),
        ("zst", "zstd", &["-q", "-d", "--rm"][..]),
    ] {
        let list = capture(
            step,
            Command::new("find")
                .arg(modules)
                .args(["-name", &format!("*.ko.{ext}")]),
        )?;
        let files: Vec<&str> = list.lines().collect();
        if files.is_empty() {
            continue;
        }
        if xtask::which(tool).is_none() {
            bail!("{step} failed: its modules are .ko.{ext} and `{tool}` is not installed");
        }
        for chunk in files.chunks(256) {
            run(
                step,
                Command::new(tool).args(args).args(chunk),
                Output::Stderr(""),
            )?;
        }
    }
    Ok(())
}
