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

pub struct Kernel {
    pub series: &'static Series,
    /// `5.10.0-46-cloud-amd64`.
    pub release: String,
    /// The Debian package version, `5.10.262-1`.
    pub version: String,
    /// `vmlinuz`, `lib/modules/<release>`, `initrd.gz`.
    pub dir: PathBuf,
}

/// # Errors
/// When apt cannot name, download or unpack a kernel.
pub fn kernels(series: &[&'static Series]) -> Result<Vec<Kernel>> {
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
            prepare(&deb, release, &dir)?;
            let version = deb_version(&deb).unwrap_or_default();
            fs::write(dir.join("ready"), format!("{version}\n"))?;
        }
        let release = package.trim_start_matches("linux-image-").to_owned();
        let version = fs::read_to_string(dir.join("ready"))?.trim().to_owned();
        initrd::build(&dir, &release)?;
        eprintln!("xtask: kernel {} is {release} ({version})", s.name);
        out.push(Kernel {
            series: s,
            release,
            version,
            dir,
        });
    }
    Ok(out)
}

/// `pkg_1.2-3_amd64.deb` -> `1.2-3`.
fn deb_version(deb: &Path) -> Option<String> {
    let name = deb.file_name()?.to_str()?;
    Some(name.split('_').nth(1)?.to_owned())
}

/// vmlinuz and the module tree out of the .deb, modules decompressed and indexed.
fn prepare(deb: &Path, release: &str, dir: &Path) -> Result<()> {
    let step = format!("unpacking {}", deb.display());
    let tmp = dir.with_extension("unpack");
    for d in [&tmp, dir] {
        if d.exists() {
            fs::remove_dir_all(d)
                .with_context(|| format!("{step}: cannot remove {}", d.display()))?;
        }
    }
    let mut x = Command::new("dpkg-deb");
    x.arg("-x").arg(deb).arg(&tmp);
    run(&step, &mut x, Output::Stderr(""))?;
    let modules = dir.join("lib/modules");
    fs::create_dir_all(&modules)?;
    fs::rename(
        tmp.join(format!("boot/vmlinuz-{release}")),
        dir.join("vmlinuz"),
    )
    .with_context(|| format!("{step}: no boot/vmlinuz-{release} in it"))?;
    fs::rename(tmp.join("lib/modules").join(release), modules.join(release))
        .with_context(|| format!("{step}: no lib/modules/{release} in it"))?;
    fs::remove_dir_all(&tmp)?;
    for (ext, tool, args) in [
        ("xz", "xz", &["-d"][..]),
        ("zst", "zstd", &["-q", "-d", "--rm"][..]),
    ] {
        let list = capture(
            &step,
            Command::new("find")
                .arg(&modules)
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
                &step,
                Command::new(tool).args(args).args(chunk),
                Output::Stderr(""),
            )?;
        }
    }
    let mut depmod = Command::new("depmod");
    depmod.arg("-b").arg(dir).arg(release);
    run(
        "indexing the kernel's modules (depmod)",
        &mut depmod,
        Output::Stderr(""),
    )
}
