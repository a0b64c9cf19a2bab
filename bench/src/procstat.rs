//! Reading /proc: the whole machine's CPU time, one process's CPU time and memory, and the
//! kernel memory of the eBPF maps a process holds (the agent's maps live outside its RSS).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Clock ticks per second of /proc's CPU counters.
fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    #[expect(clippy::cast_precision_loss, reason = "a small constant, usually 100")]
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    hz
}

/// Busy CPU seconds of the whole machine so far (every core; idle and iowait excluded).
pub(crate) fn machine_busy_s() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat.lines().next().context("empty /proc/stat")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().take(8).sum(); // user..steal; guest is counted in user already
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    #[expect(clippy::cast_precision_loss, reason = "CPU ticks")]
    let busy = (total - idle) as f64;
    Ok(busy / ticks_per_s())
}

/// CPU seconds (user + system) process `pid` has used.
pub(crate) fn proc_cpu_s(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces: fields count from after its closing parenthesis.
    let rest = &stat[stat.rfind(')').context("bad stat")? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>()? + f[12].parse::<u64>()?;
    #[expect(clippy::cast_precision_loss, reason = "CPU ticks")]
    let s = ticks as f64 / ticks_per_s();
    Ok(s)
}

/// A `Vm*:` field of /proc/PID/status in KiB (`VmRSS`, `VmHWM`).
pub(crate) fn vm_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no {field} for pid {pid}"))
}

/// Kernel memory charged to the eBPF maps that `pid` holds open (`memlock` of each map fd).
pub(crate) fn bpf_maps_kib(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return 0;
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut bytes = 0;
    for info in dir
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
    {
        let field = |k: &str| info.lines().find_map(|l| l.strip_prefix(k)).map(str::trim);
        // One map can be open on several fds: count each map id once.
        if let (Some(id), Some(mem)) = (field("map_id:"), field("memlock:"))
            && seen.insert(id.to_owned())
        {
            bytes += mem.parse::<u64>().unwrap_or(0);
        }
    }
    bytes / 1024
}

/// The agent's CPU use over `window` (percent of one core) and its largest RSS seen, sampled
/// every 250 ms (bounded by the window).
pub(crate) fn sample(pid: u32, window: Duration) -> Result<(f64, u64)> {
    let (c0, t0) = (proc_cpu_s(pid)?, Instant::now());
    let mut max_rss = vm_kib(pid, "VmRSS")?;
    while t0.elapsed() < window {
        crate::pool::check_interrupted()?;
        std::thread::sleep(Duration::from_millis(250).min(window.saturating_sub(t0.elapsed())));
        max_rss = max_rss.max(vm_kib(pid, "VmRSS")?);
    }
    let pct = (proc_cpu_s(pid)? - c0) / t0.elapsed().as_secs_f64() * 100.0;
    Ok((pct, max_rss))
}
