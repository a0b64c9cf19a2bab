//! An arm64 guest: Debian's arm64 cloud kernel under `qemu-system-aarch64` (TCG, `-machine
//! virt -cpu max`). The host's userland is x86_64, so the guest cannot share it as the amd64
//! guests do (vm.rs): its initramfs is the whole userland, arm64 static busybox from Debian
//! (downloaded with the series' private apt configuration, apt.rs), the static aarch64 agent
//! and the modules `check` needs, with `xtask/guest/init-arm64.sh` as /init. It runs
//! `lifeline check`, whose rows load, attach and exercise every program of the probe, and
//! prints it on the serial console; the lab tests stay on amd64 (they are x86_64 executables
//! driving x86_64 tools).

use std::{
    fs,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};
use xtask::process::{Output, run as run_step};

use super::{apt::Apt, fetch::Kernel, vm::Run};

const INIT: &str = include_str!("../../guest/init-arm64.sh");
/// `check` loads the probe once and calibrates; under TCG that takes well under a minute.
const GUEST_DEADLINE: Duration = Duration::from_mins(5);
/// sock_diag's TCP listing and SOCK_DESTROY; modules in Debian's cloud kernels.
const MODULES: [&str; 2] = ["inet_diag", "tcp_diag"];

/// Boots `k` with `lifeline` (the aarch64 static build) and reads back what `check` printed.
///
/// # Errors
/// When busybox cannot be fetched, a tool fails, or the guest overruns its deadline or
/// prints no check.
pub fn run(k: &Kernel, lifeline: &Path, out: &Path) -> Result<Run> {
    if out.exists() {
        fs::remove_dir_all(out)?;
    }
    fs::create_dir_all(out)?;
    let cache = xtask::cache_dir()?.join("kernels");
    let debs = cache.join("debs-arm64");
    fs::create_dir_all(&debs)?;
    let busybox = Apt::new(k.series, &cache)?.download("busybox-static", &debs)?;
    let initrd = out.join("initrd.gz");
    build_initrd(k, &busybox, lifeline, &initrd)?;
    let start = Instant::now();
    let mut qemu = Command::new("qemu-system-aarch64");
    qemu.args([
        "-machine",
        "virt",
        "-accel",
        "tcg,thread=multi",
        "-cpu",
        "max",
    ])
    .args([
        "-smp", "2", "-m", "2048", "-display", "none", "-monitor", "none",
    ])
    .arg("-no-reboot")
    .arg("-serial")
    .arg(format!("file:{}", out.join("console.log").display()))
    .arg("-kernel")
    .arg(k.dir.join("vmlinuz"))
    .arg("-initrd")
    .arg(&initrd)
    .args(["-append", "console=ttyAMA0 quiet panic=-1"])
    .stdin(Stdio::null())
    .stdout(fs::File::create(out.join("qemu.log"))?)
    .stderr(Stdio::inherit());
    let mut child = Reaped(qemu.spawn().context("cannot start qemu-system-aarch64")?);
    while child.0.try_wait()?.is_none() {
        if start.elapsed() > GUEST_DEADLINE {
            bail!(
                "the {} guest overran {GUEST_DEADLINE:?}; see {}",
                k.release,
                out.display()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let wall = start.elapsed();
    let console = fs::read_to_string(out.join("console.log")).unwrap_or_default();
    let Some((check, exit, secs)) = check_output(&console) else {
        bail!(
            "the {} guest printed no `lifeline check`; see {}/console.log",
            k.release,
            out.display()
        );
    };
    fs::write(out.join("check.txt"), format!("{check}exit {exit}\n"))?;
    fs::write(out.join("runner-secs"), format!("{secs}\n"))?;
    eprintln!(
        "xtask: {} guest done in {:.0}s (check exit {exit})",
        k.release,
        wall.as_secs_f64()
    );
    Ok(Run {
        series: k.series.name,
        release: k.release.clone(),
        version: k.version.clone(),
        out: out.to_path_buf(),
        wall,
    })
}

/// qemu killed and reaped on every path.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// (check's output, its exit code, the runner's seconds) between init-arm64.sh's markers.
/// The serial console is a tty: lines end in CR LF.
fn check_output(console: &str) -> Option<(String, i32, u64)> {
    let body = &console[console.find("@@check-begin")? + "@@check-begin".len()..];
    let end = body.find("@@check-exit ")?;
    let mut check = String::new();
    for line in body[..end]
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
    {
        check.push_str(line);
        check.push('\n');
    }
    let word = |marker: &str| {
        let rest = &console[console.find(marker)? + marker.len()..];
        rest.split_whitespace().next()?.parse::<i64>().ok()
    };
    let exit = i32::try_from(word("@@check-exit ")?).ok()?;
    let secs = u64::try_from(word("@@runner-secs ").unwrap_or(0)).ok()?;
    Some((check, exit, secs))
}

/// busybox, the agent, `MODULES` with what they depend on (modules.dep, which fetch.rs made
/// with depmod), indexed again for the initramfs, and /init.
fn build_initrd(k: &Kernel, busybox_deb: &Path, lifeline: &Path, archive: &Path) -> Result<()> {
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
    run_step(&step, &mut x, Output::Stderr(""))?;
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
    run_step(&step, &mut depmod, Output::Stderr(""))?;
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
    run_step(&step, &mut cpio, Output::Stderr(""))?;
    fs::remove_dir_all(&root)?;
    Ok(())
}
