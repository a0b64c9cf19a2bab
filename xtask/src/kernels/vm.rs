//! One guest: two virtiofsd (the host's `/`, read-only in the guest, and the results
//! directory) and qemu with TCG (`-accel tcg,thread=multi -cpu max`, 2 vCPUs). The root
//! share caches everything (`cache=always`: nothing the guest reads changes during a run,
//! and every exec over an uncached share costs about a second under TCG). Every child is
//! killed and reaped, and the sockets removed, on every path.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use super::{build::Built, died::Died, fetch::Kernel};

const VIRTIOFSD: &str = "/usr/lib/qemu/virtiofsd";
const GUEST_DEADLINE: Duration = Duration::from_mins(25);
const MEMORY_MB: u32 = 3072;

/// A finished guest: where its results are, and how long it ran.
pub(super) struct Run {
    pub series: &'static str,
    pub release: String,
    pub version: String,
    pub out: PathBuf,
    pub wall: Duration,
    /// How the first boot died, when this is the second (`run`).
    pub first_boot: Option<String>,
}

/// Children killed and reaped on drop, their sockets removed.
struct Guard(Vec<Child>, Vec<PathBuf>);

impl Drop for Guard {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
        for s in &self.1 {
            let _ = fs::remove_file(s);
        }
    }
}

/// Boots `k` with the plan in `out` and waits for it to power off. A guest whose kernel died
/// before its runner finished is booted once more, and says why: qemu's TCG emulation
/// crashes a guest kernel now and then (an int3 while the kernel patches its own text, in
/// early boot or later), and one crash proves nothing about lifeline. The first boot's
/// console is kept, the tests then in flight and the kernel's last words are printed, and the
/// report shows them beside the second boot's results; a second death fails the matrix.
///
/// # Errors
/// When a process cannot start, the guest overruns its deadline, or it dies twice.
pub(super) fn run(k: &Kernel, built: &Built, out: &Path) -> Result<Run> {
    let died = match boot(k, built, out)? {
        Ok(run) => return Ok(run),
        Err(died) => died,
    };
    let first = out
        .parent()
        .unwrap_or(out)
        .join(format!("{}.first-boot-console.log", k.release));
    let _ = fs::copy(out.join("console.log"), &first);
    eprintln!(
        "xtask: the {} guest died before its runner finished ({died}; its console: {}); booting it once more",
        k.release,
        first.display()
    );
    match boot(k, built, out)? {
        Ok(run) => Ok(Run {
            first_boot: Some(died.to_string()),
            ..run
        }),
        Err(again) => bail!(
            "the {} guest died twice before its runner finished: {died}; then {again}; see {}/console.log",
            k.release,
            out.display()
        ),
    }
}

fn boot(k: &Kernel, built: &Built, out: &Path) -> Result<Result<Run, Died>> {
    if out.exists() {
        fs::remove_dir_all(out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    fs::create_dir_all(out)?;
    super::build::write_plan(built, out)?;
    let tmp = std::env::temp_dir();
    let pid = std::process::id();
    let socks = [
        tmp.join(format!("lifeline-vm-{pid}.root")),
        tmp.join(format!("lifeline-vm-{pid}.out")),
    ];
    let mut guard = Guard(Vec::new(), socks.to_vec());
    for (sock, source, cache) in [
        (&socks[0], Path::new("/"), "always"),
        (&socks[1], out, "none"),
    ] {
        let log = fs::File::create(out.join(format!("virtiofsd-{cache}.log")))?;
        let mut cmd = Command::new(VIRTIOFSD);
        cmd.arg(format!("--socket-path={}", sock.display()))
            .arg("-o")
            .arg(format!("source={}", source.display()))
            .args(["-o", "sandbox=chroot", "-o", &format!("cache={cache}")])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        guard.0.push(
            cmd.spawn()
                .with_context(|| format!("cannot start {VIRTIOFSD}"))?,
        );
    }
    for _ in 0..200 {
        if socks.iter().all(|s| s.exists()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let start = Instant::now();
    let mut qemu = qemu_command(k, &socks, out)?;
    guard
        .0
        .push(qemu.spawn().context("cannot start qemu-system-x86_64")?);
    let qemu_child = guard.0.last_mut().context("qemu")?;
    loop {
        if qemu_child.try_wait()?.is_some() {
            break;
        }
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
    drop(guard);
    if !out.join("runner-secs").is_file() {
        return Ok(Err(Died::read(out, wall)));
    }
    eprintln!(
        "xtask: {} guest done in {:.0}s",
        k.release,
        wall.as_secs_f64()
    );
    Ok(Ok(Run {
        series: k.series.name,
        release: k.release.clone(),
        version: k.version.clone(),
        out: out.to_path_buf(),
        wall,
        first_boot: None,
    }))
}

fn qemu_command(k: &Kernel, socks: &[PathBuf; 2], out: &Path) -> Result<Command> {
    let mut cmd = Command::new("qemu-system-x86_64");
    let mem = format!("memory-backend-memfd,id=mem,size={MEMORY_MB}M,share=on");
    let modules = k.dir.join("lib/modules").join(&k.release);
    cmd.args(["-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2"])
        .args([
            "-m",
            &MEMORY_MB.to_string(),
            "-object",
            &mem,
            "-numa",
            "node,memdev=mem",
        ])
        .args(["-display", "none", "-monitor", "none", "-no-reboot"])
        .arg("-serial")
        .arg(format!("file:{}", out.join("console.log").display()))
        .arg("-chardev")
        .arg(format!("socket,id=root,path={}", socks[0].display()))
        .args(["-device", "vhost-user-fs-pci,chardev=root,tag=hostroot"])
        .arg("-chardev")
        .arg(format!("socket,id=out,path={}", socks[1].display()))
        .args(["-device", "vhost-user-fs-pci,chardev=out,tag=outshare"])
        .arg("-kernel")
        .arg(k.dir.join("vmlinuz"))
        .arg("-initrd")
        .arg(&k.initrd)
        .arg("-append")
        .arg(format!(
            "console=ttyS0 quiet panic=-1 lifeline.modules={}",
            modules.display()
        ));
    let log = fs::File::create(out.join("qemu.log"))?;
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    Ok(cmd)
}
