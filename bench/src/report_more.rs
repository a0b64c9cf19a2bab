//! The report's targets, cost and scale sections.

use std::fmt::Write as _;

use anyhow::Result;

use crate::cost::Cost;
use crate::matrix::Cell;
use crate::scale::Scale;

pub(crate) fn targets(s: &mut String, cells: &[Cell], cost: Option<&Cost>) -> Result<()> {
    writeln!(s, "## Targets\n")?;
    writeln!(s, "| target | measured | limit | verdict |")?;
    writeln!(s, "|---|---|---|---|")?;
    for t in crate::targets::check(cells, cost) {
        let (m, verdict) = match t.measured {
            Some(m) if t.met() => (format!("{m:.2} {}", t.unit), "met".to_owned()),
            Some(m) => (
                format!("{m:.2} {}", t.unit),
                format!("**missed** by {:.2} {}", m - t.limit, t.unit),
            ),
            None => ("beyond the cap".into(), "**missed**".into()),
        };
        writeln!(
            s,
            "| {} | {m} | {:.2} {} | {verdict} |",
            t.what, t.limit, t.unit
        )?;
    }
    writeln!(s)?;
    Ok(())
}

#[expect(clippy::cast_precision_loss, reason = "KiB for display")]
pub(crate) fn scale(s: &mut String, sc: &Scale) -> Result<()> {
    writeln!(s, "## Scale\n")?;
    writeln!(
        s,
        "`--max-sockets` set to the number of watched connections held open, all idle (every \
        one gets keepalive probes); CPU is the agent's, at rest, over 65 s from 20 s after the \
        connections were open (past the keepalive time and the silent timeout, so every idle \
        socket is being probed, and including one whole read of the map, which the agent does \
        every 60 s); CPU per sweep is that per second (one sweep a second, `--sweep-interval \
        1s`). `lifeline status --json`: the median of three requests, the command's wall time. \
        Over the same window: the probe's unanswered-probe news and fast pokes (the agent's \
        metrics), and the packets the host dropped at its per-CPU input queue \
        (`/proc/net/softnet_stat`; every probe and answer between the lab's namespaces passes \
        it, and one dropped there is a probe unanswered). The host's input queue is made as \
        deep as the connections held (`net.core.netdev_max_backlog`, put back afterwards): \
        the kernel fires the keepalive timers of one 32 ms bucket together, about 3,000 \
        probes at once at 100,000 sockets, and at the default depth of 1000 the lab dropped \
        about half of them and their answers, a loss no node's NIC makes (`bench/src/sysctl.rs`). The host's softirq time over the \
        window is the lab's packets and timers; {}\n",
        irq_time_note()
    )?;
    writeln!(
        s,
        "| watched | flags | listed by status | ready | CPU (% of one core) | CPU per sweep | RSS | eBPF maps | `lifeline status --json` | unanswered-probe news /s | fast pokes /s | input queue | input-queue drops /s | host softirq (% of one core) | softirq on the busiest CPU (% of it) |"
    )?;
    writeln!(
        s,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )?;
    for p in &sc.points {
        writeln!(
            s,
            "| {} | {} | {} | {:.2} s | {:.2} % | {:.1} ms | {:.1} MiB | {:.1} MiB | {} ms | {:.0} | {:.0} | {} | {:.0} | {:.1} % | {:.1} % |",
            p.sockets,
            if p.keepalive.is_empty() {
                "defaults"
            } else {
                p.keepalive
            },
            p.watched_seen,
            p.ready.as_secs_f64(),
            p.cpu_pct,
            p.cpu_ms_per_sweep,
            p.rss_kib as f64 / 1024.0,
            p.maps_kib as f64 / 1024.0,
            p.status_ms,
            p.why.unanswered,
            p.why.pokes,
            p.backlog,
            p.why.drops,
            p.why.softirq_pct,
            p.why.softirq_busiest_pct
        )?;
    }
    for e in &sc.failures {
        writeln!(s, "\n**Failed**: {}", e.replace('\n', " "))?;
    }
    let Some(f) = &sc.full else { return Ok(()) };
    writeln!(
        s,
        "\nA full map (`--max-sockets {}`, {} connections opened): `sockets_full` = {} in `lifeline status --json`.",
        f.max_sockets, f.opened, f.not_watched
    )?;
    match &f.log_line {
        Some(l) => writeln!(s, "The log says:\n\n```\n{l}\n```")?,
        None => writeln!(
            s,
            "**No \"SOCKETS map is full\" log line appeared within 15 s.**"
        )?,
    }
    match &f.table_line {
        Some(l) => writeln!(s, "\n`lifeline status` shows: `{l}`\n")?,
        None => writeln!(
            s,
            "\n**`lifeline status` (table) shows no NOT WATCHED line.**\n"
        )?,
    }
    Ok(())
}

/// Whether this kernel charges a softirq to the task it interrupts (its build config).
fn irq_time_note() -> &'static str {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let config =
        std::fs::read_to_string(format!("/boot/config-{}", release.trim())).unwrap_or_default();
    if config.contains("CONFIG_IRQ_TIME_ACCOUNTING=y") {
        "this kernel accounts it apart (`CONFIG_IRQ_TIME_ACCOUNTING=y`): none is in the agent's \
        CPU."
    } else if config.contains("# CONFIG_IRQ_TIME_ACCOUNTING is not set") {
        "this kernel is built without `CONFIG_IRQ_TIME_ACCOUNTING`, so it charges the part that \
        interrupts the agent to the agent's CPU (`account_system_index_time()` in \
        kernel/sched/cputime.c)."
    } else {
        "whether this kernel charges the part that interrupts the agent to the agent's CPU \
        (`CONFIG_IRQ_TIME_ACCOUNTING` off) was not found in its build config."
    }
}

/// (what, measured, limit, unit) rows for the scale targets.
#[expect(clippy::cast_precision_loss, reason = "milliseconds for display")]
pub(crate) fn scale_targets(sc: &Scale) -> Vec<(String, Option<f64>, f64, &'static str)> {
    let mut out = Vec::new();
    for p in sc.points.iter().filter(|p| p.sockets >= 100_000) {
        let flags = if p.keepalive.is_empty() {
            "defaults"
        } else {
            p.keepalive
        };
        out.push((
            format!("agent CPU, {} watched idle sockets ({flags})", p.sockets),
            Some(p.cpu_pct),
            1.0,
            "% of one core",
        ));
        out.push((
            format!("`lifeline status --json`, {} sockets ({flags})", p.sockets),
            Some(p.status_ms as f64),
            300.0,
            "ms",
        ));
    }
    out
}

/// A small targets table: measured against the limit, and by how much a miss misses.
pub(crate) fn target_rows(
    s: &mut String,
    rows: &[(String, Option<f64>, f64, &'static str)],
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        s,
        "| target | measured | limit | verdict |\n|---|---|---|---|"
    )?;
    for (what, m, limit, unit) in rows {
        let (shown, verdict) = match m {
            Some(m) if m <= limit => (format!("{m:.2} {unit}"), "met".to_owned()),
            Some(m) => (
                format!("{m:.2} {unit}"),
                format!("**missed** by {:.2} {unit} ({:.1}x)", m - limit, m / limit),
            ),
            None => ("not measured".into(), "**missed**".into()),
        };
        writeln!(s, "| {what} | {shown} | {limit:.2} {unit} | {verdict} |")?;
    }
    writeln!(s)?;
    Ok(())
}
