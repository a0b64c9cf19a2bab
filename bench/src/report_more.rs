//! The report's targets, cost and scale sections.

use std::fmt::Write as _;

use anyhow::Result;

use crate::cost::Cost;
use crate::matrix::Cell;
use crate::scale::Scale;

pub fn targets(s: &mut String, cells: &[Cell], cost: Option<&Cost>) -> Result<()> {
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
pub fn scale(s: &mut String, sc: &Scale) -> Result<()> {
    writeln!(s, "## Scale\n")?;
    writeln!(
        s,
        "`--max-sockets` set to the number of watched connections held open; CPU per sweep is the \
        agent's CPU time per second at rest (one sweep a second, `--sweep-interval 1s`).\n"
    )?;
    writeln!(
        s,
        "| watched | listed by status | ready | CPU per sweep | RSS | eBPF maps | `lifeline status --json` |"
    )?;
    writeln!(s, "|---|---|---|---|---|---|---|")?;
    for p in &sc.points {
        writeln!(
            s,
            "| {} | {} | {:.2} s | {:.1} ms | {:.1} MiB | {:.1} MiB | {} ms |",
            p.sockets,
            p.watched_seen,
            p.ready.as_secs_f64(),
            p.cpu_ms_per_sweep,
            p.rss_kib as f64 / 1024.0,
            p.maps_kib as f64 / 1024.0,
            p.status_ms
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
