//! The arm64 guest's initramfs (arm64.rs): its whole userland, since the host's is `x86_64`.
//! Rebuilt every run, beside the guest's results: it takes a second and carries the agent
//! and `xtask/guest/init-arm64.sh`, which may have changed.

use std::{fs, path::Path, process::Command};

use anyhow::{Context as _, Result};
use xtask::process::{Output, run};

use super::fetch::Kernel;

const INIT: &str = include_str!("../../guest/init-arm64.sh");
/// `sock_diag`'s TCP listing and `SOCK_DESTROY`; modules in Debian's cloud kernels.
const MODULES: [&str; 2] = ["inet_diag", "tcp_diag"];

/// busybox, the agent, `MODULES` with what they depend on (modules.dep, which fetch.rs made
/// with depmod), indexed again for the initramfs, and /init.
pub(super) fn build(k: &Kernel, busybox_deb: &Path, lifeline: &Path, archive: &Path) -> Result<()> {
    let step = format!("building the initramfs of {}", k.release);
    let root = archive.with_extension("d");
    if root.exists() {
        fs::remove_dir_all(&root)?;
    }
    let mods = format!("lib/modules/{}", k.release);
    for d in ["bin", "proc", "sys", "dev", "tmp", "run", "etc", &mods] {
        fs::create_dir_all(root.join(d))?;
    }
    let unpacked = root.with_extension("busybox");
    let mut x = Command::new("dpkg-deb");
    x.arg("-x").arg(busybox_deb).arg(&unpacked);
    run(&step, &mut x, Output::Stderr(""))?;
    fs::rename(unpacked.join("bin/busybox"), root.join("bin/busybox"))
        .with_context(|| format!("{step}: no bin/busybox in {}", busybox_deb.display()))?;
    fs::remove_dir_all(&unpacked)?;
    fs::copy(lifeline, root.join("bin/lifeline"))?;
    let tree = k.dir.join(&mods);
    let dep = fs::read_to_string(tree.join("modules.dep"))
        .with_context(|| format!("{step}: no modules.dep"))?;
    for module in MODULES {
        // `kernel/net/ipv4/tcp_diag.ko: kernel/net/ipv4/inet_diag.ko`: it, then its deps.
        let suffix = format!("/{module}.ko:");
        let Some(line) = dep.lines().find(|l| l.contains(&suffix)) else {
            continue; // built in
        };
        for rel in line.split([':', ' ']).filter(|p| !p.is_empty()) {
            let to = root.join(&mods).join(rel);
            fs::create_dir_all(to.parent().unwrap_or(&root))?;
            fs::copy(tree.join(rel), &to).with_context(|| format!("{step}: copying {rel}"))?;
        }
    }
    for f in [
        "modules.order",
        "modules.builtin",
        "modules.builtin.modinfo",
    ] {
        if tree.join(f).is_file() {
            fs::copy(tree.join(f), root.join(&mods).join(f))?;
        }
    }
    let mut depmod = Command::new("depmod");
    depmod.arg("-b").arg(&root).arg(&k.release);
    run(&step, &mut depmod, Output::Stderr(""))?;
    fs::write(root.join("init"), INIT)?;
    for f in ["init", "bin/busybox", "bin/lifeline"] {
        fs::set_permissions(
            root.join(f),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )?;
    }
    let script = "find . | cpio -o -H newc --quiet | gzip -1 > \"$0\"";
    let mut cpio = Command::new("sh");
    cpio.current_dir(&root).args(["-c", script]).arg(archive);
    run(&step, &mut cpio, Output::Stderr(""))?;
    fs::remove_dir_all(&root)?;
    Ok(())
}
