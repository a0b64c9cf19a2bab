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
        it, and one dropped there is a probe unanswered).\n"
    )?;
    writeln!(
        s,
        "| watched | flags | listed by status | ready | CPU (% of one core) | CPU per sweep | RSS | eBPF maps | `lifeline status --json` | unanswered-probe news /s | fast pokes /s | input-queue drops /s |"
    )?;
    writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|")?;
    for p in &sc.points {
        writeln!(
            s,
            "| {} | {} | {} | {:.2} s | {:.2} % | {:.1} ms | {:.1} MiB | {:.1} MiB | {} ms | {:.0} | {:.0} | {:.0} |",
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
            p.why.drops
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
