//! The guest's initramfs: static busybox, the modules that reach the host's root over
//! virtiofs (`virtio_pci`, fuse, virtiofs, overlay, where they are modules) and
//! `xtask/guest/init.sh` as /init. Everything else is loaded later from the kernel's whole
//! module tree, bind-mounted from the cache. Rebuilt every run, in the workspace's target
//! directory: it takes a second and carries init.sh, which may have changed.

use std::{fs, path::Path, process::Command};

use anyhow::{Context as _, Result};
use xtask::process::{Output, capture, run};

const INIT: &str = include_str!("../../guest/init.sh");
const EARLY_MODULES: [&str; 4] = ["virtio_pci", "fuse", "virtiofs", "overlay"];
/// Static busybox (`busybox-static`, which `packages::ensure_matrix` installs): the
/// initramfs has no libc.
const BUSYBOX: &str = "/bin/busybox";

/// Writes `archive` from the kernel prepared in `dir`.
///
/// # Errors
/// When a file is missing or the archive cannot be made.
pub(super) fn build(dir: &Path, release: &str, archive: &Path) -> Result<()> {
    let step = format!("building the initramfs of {release}");
    let root = archive.with_extension("d");
    if root.exists() {
        fs::remove_dir_all(&root)?;
    }
    let mods = format!("lib/modules/{release}");
    for d in [
        "bin", "sbin", "proc", "sys", "dev", "tmp", "host", "out", "ov", "newroot", &mods,
    ] {
        fs::create_dir_all(root.join(d))?;
    }
    fs::copy(BUSYBOX, root.join("bin/busybox"))
        .with_context(|| format!("{step}: copying busybox"))?;
    let applets = capture(&step, Command::new(BUSYBOX).arg("--list"))?;
    for applet in applets.lines().filter(|a| *a != "busybox") {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet))?;
        std::os::unix::fs::symlink("../bin/busybox", root.join("sbin").join(applet))?;
    }
    let tree = dir.join(&mods);
    let dep = fs::read_to_string(tree.join("modules.dep"))
        .with_context(|| format!("{step}: no modules.dep"))?;
    for module in EARLY_MODULES {
        // `kernel/fs/fuse/virtiofs.ko: kernel/fs/fuse/fuse.ko`: the module, then its deps.
        let Some(line) = dep.lines().find(|l| {
            l.split(':')
                .next()
                .is_some_and(|m| m.ends_with(&format!("/{module}.ko")))
        }) else {
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
    run(
        &step,
        Command::new("depmod").arg("-b").arg(&root).arg(release),
        Output::Stderr(""),
    )?;
    fs::write(root.join("init"), INIT)?;
    fs::set_permissions(
        root.join("init"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let script = "find . | cpio -o -H newc --quiet | gzip -1 > \"$0\"";
    let mut cpio = Command::new("sh");
    cpio.current_dir(&root).args(["-c", script]).arg(archive);
    run(&step, &mut cpio, Output::Stderr(""))?;
    fs::remove_dir_all(&root)?;
    Ok(())
}
