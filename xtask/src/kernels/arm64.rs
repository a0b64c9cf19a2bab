//! An arm64 guest: Debian's arm64 cloud kernel under `qemu-system-aarch64` (TCG, `-machine
//! virt -cpu max`). The host's userland is `x86_64`, so the guest cannot share it as the amd64
//! guests do (vm.rs): its initramfs is the whole userland, arm64 static busybox from Debian
//! (downloaded with the series' private apt configuration, apt.rs), the static aarch64 agent
//! and the modules `check` needs, with `xtask/guest/init-arm64.sh` as /init. It runs
//! `lifeline check`, whose rows load, attach and exercise every program of the probe, and
//! prints it on the serial console; the lab tests stay on amd64 (they are `x86_64` executables
//! driving `x86_64` tools).

use std::{
    fs,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use super::{apt::Apt, fetch::Kernel, initrd_arm64, vm::Run};

/// `check` loads the probe once and calibrates; under TCG that takes well under a minute.
const GUEST_DEADLINE: Duration = Duration::from_mins(5);

/// Boots `k` with `lifeline` (the aarch64 static build) and reads back what `check` printed.
///
/// # Errors
/// When busybox cannot be fetched, a tool fails, or the guest overruns its deadline or
/// prints no check.
pub(super) fn run(k: &Kernel, lifeline: &Path, out: &Path) -> Result<Run> {
    if out.exists() {
        fs::remove_dir_all(out)?;
    }
    fs::create_dir_all(out)?;
    let cache = xtask::cache_dir()?.join("kernels");
    let debs = cache.join("debs-arm64");
    fs::create_dir_all(&debs)?;
    let busybox = Apt::new(k.series, &cache)?.download("busybox-static", &debs)?;
    let initrd = out.join("initrd.gz");
    initrd_arm64::build(k, &busybox, lifeline, &initrd)?;
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
        first_boot: None,
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

#[cfg(test)]
mod tests {
    use super::check_output;

    #[test]
    fn reads_check_between_the_markers_of_a_serial_console() {
        let console = "[    1.0] boot\r\n@@check-begin\r\nCHECK  RESULT\r\nbtf    pass\r\n\
                       @@check-exit 1\r\n@@runner-secs 7\r\n[    9.0] reboot: Power down\r\n";
        assert_eq!(
            check_output(console),
            Some(("CHECK  RESULT\nbtf    pass\n".to_owned(), 1, 7))
        );
        assert_eq!(
            check_output("@@check-begin\r\nCHECK\r\n[ 3.0] Kernel panic"),
            None
        );
    }
}
