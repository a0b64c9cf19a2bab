//! The machine the numbers come from, for the report.

/// `uname -a`, cores, memory and CPU model, as lines for the report.
pub(crate) fn describe() -> Vec<String> {
    let uname = std::process::Command::new("uname")
        .arg("-a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, m)| m.trim())
        })
        .unwrap_or("unknown")
        .to_owned();
    #[expect(clippy::cast_precision_loss, reason = "memory size for display")]
    let gib = mem_kib as f64 / 1024.0 / 1024.0;
    vec![
        format!("`uname -a`: `{uname}`"),
        format!("nproc: {cores} ({model})"),
        format!("memory: {gib:.1} GiB"),
    ]
}
