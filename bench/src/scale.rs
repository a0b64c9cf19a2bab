//! Scale: the agent watching 10,000 and 100,000 connections (`--max-sockets` sized for them):
//! its CPU per sweep (the sweep runs every second) and its memory, user space and eBPF maps;
//! then a map too small for what it must watch, which must be loud: the log line and the
//! status counter.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::procstat::{bpf_maps_kib, sample};
use crate::socklab::SockLab;

pub(crate) struct Point {
    pub sockets: usize,
    /// `--keepalive` (and `--silent-timeout`) the agent ran with; empty: its defaults.
    pub keepalive: &'static str,
    /// The agent's CPU at rest, % of one core.
    pub cpu_pct: f64,
    pub watched_seen: usize,
    pub ready: Duration,
    pub cpu_ms_per_sweep: f64,
    pub rss_kib: u64,
    pub maps_kib: u64,
    pub status_ms: u128,
    /// `net.core.netdev_max_backlog` over the point (`sysctl::backlog_for`).
    pub backlog: usize,
    /// What happened over the CPU window (`scale_why`).
    pub why: crate::scale_why::Rates,
}

pub(crate) struct Full {
    pub max_sockets: usize,
    pub opened: usize,
    pub log_line: Option<String>,
    pub not_watched: u64,
    pub table_line: Option<String>,
}

pub(crate) struct Scale {
    pub points: Vec<Point>,
    pub full: Option<Full>,
    pub failures: Vec<String>,
}

/// Each part on its own: one that fails is reported, the others still run.
pub(crate) fn run() -> Scale {
    // Longer than `RECONCILE` (the agent's whole read of its map, every 60 s), so the
    // average includes one (`--quick` too).
    let window = Duration::from_secs(65);
    let mut failures = Vec::new();
    let mut points = Vec::new();
    for (n, keepalive) in POINTS {
        match point(n, keepalive, window) {
            Ok(p) => points.push(p),
            Err(e) => failures.push(format!("{n} sockets: {e:#}")),
        }
    }
    let full = full()
        .map_err(|e| failures.push(format!("full map: {e:#}")))
        .ok();
    Scale {
        points,
        full,
        failures,
    }
}

/// Sockets, and the keepalive flags: the defaults, then the same short keepalive spelled out
/// (a probe every second after 1 s idle, the defaults since issue 23) that makes idle looks
/// the most frequent.
const POINTS: [(usize, &str); 3] = [
    (10_000, ""),
    (100_000, ""),
    (100_000, "--keepalive=1s,1s,20 --silent-timeout=13s"),
];

fn point(n: usize, keepalive: &'static str, window: Duration) -> Result<Point> {
    crate::pool::check_interrupted()?;
    println!("scale: {n} watched connections {keepalive}");
    let mut l = SockLab::new()?;
    let max = n.to_string();
    let mut args = vec![
        "--max-sockets",
        &max,
        "--metrics-addr",
        crate::scale_why::METRICS,
    ];
    args.extend(keepalive.split_whitespace());
    // Before the connections open: their handshakes cross the same queue.
    let backlog = crate::sysctl::backlog_for(n)?;
    let (agent, ready) = l.agent(&args)?;
    l.hold(n, true)?;
    // Past the keepalive idle time and one silent timeout: every idle look has started.
    std::thread::sleep(Duration::from_secs(20));
    // The command alone: the bench's own parse of 30 MB (a debug build) is not the agent's.
    // The median of three: one request alone can meet a sweep in progress.
    let mut times = Vec::new();
    let mut text = String::new();
    for _ in 0..3 {
        let t0 = Instant::now();
        text = agent.status_json_text()?;
        times.push(t0.elapsed().as_millis());
    }
    times.sort_unstable();
    let status_ms = times[1];
    // The agent's own share, when it logs it (`LIFELINE_LOG=info,lifeline::report::status=debug,
    // lifeline::daemon::table=debug`): the whole answer, and the kernel's view in it.
    for l in agent.proc.stderr_text().lines() {
        if l.contains("status answered") || l.contains("the kernel's view read") {
            println!("scale: {n}: agent: {l}");
        }
    }
    let v: serde_json::Value = serde_json::from_str(&text)?;
    let watched_seen = v["sockets"].as_array().map_or(0, Vec::len);
    let pid = agent.proc.pid();
    let before = crate::scale_why::Counters::read(&l.lab)?;
    let (cpu_pct, rss_kib) = sample(pid, window)?;
    let why = before.to(&crate::scale_why::Counters::read(&l.lab)?);
    let p = Point {
        sockets: n,
        keepalive,
        cpu_pct,
        watched_seen,
        ready,
        // One sweep a second (the default --sweep-interval): % of a core * 10 = ms/sweep.
        cpu_ms_per_sweep: cpu_pct * 10.0,
        rss_kib,
        maps_kib: bpf_maps_kib(pid),
        status_ms,
        backlog: backlog.depth,
        why,
    };
    drop(backlog);
    println!(
        "scale: {n}: status lists {watched_seen}, {:.1} ms CPU per sweep, RSS {} KiB, maps {} KiB; per s: {:.0} unanswered-probe news, {:.0} fast pokes, {:.0} packets dropped at the input queue",
        p.cpu_ms_per_sweep, p.rss_kib, p.maps_kib, why.unanswered, why.pokes, why.drops
    );
    Ok(p)
}

/// `--max-sockets 1000` and 1,100 watched connections.
fn full() -> Result<Full> {
    crate::pool::check_interrupted()?;
    println!("scale: a full map (--max-sockets 1000, 1,100 connections)");
    let mut l = SockLab::new()?;
    let (agent, _) = l.agent(&["--max-sockets", "1000"])?;
    l.hold(1100, true)?;
    let found = lifeline_tests::wait_until(
        "the map-full log line",
        Duration::from_secs(15),
        Duration::from_millis(200),
        || {
            let text = agent.proc.stderr_text();
            Ok(text
                .lines()
                .find(|l| l.contains("SOCKETS map is full"))
                .map(str::to_owned))
        },
    );
    let log_line = found.ok();
    let not_watched = SockLab::watched(&agent)?.1;
    let table = agent.status_table().unwrap_or_default();
    let table_line = table
        .lines()
        .find(|l| l.contains("NOT WATCHED"))
        .map(|l| l.trim().to_owned());
    println!(
        "scale: map full: log line {}, not_watched {not_watched}",
        log_line.is_some()
    );
    Ok(Full {
        max_sockets: 1000,
        opened: 1100,
        log_line,
        not_watched,
        table_line,
    })
}
