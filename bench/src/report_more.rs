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

#[expect(clippy::cast_precision_loss, reason = "KiB and ms for display")]
pub fn cost(s: &mut String, c: &Cost) -> Result<()> {
    writeln!(s, "## Cost\n")?;
    writeln!(
        s,
        "1,000 watched connections (in the watched cgroup, to port 6443) and 10,000 unwatched \
        ones (outside it) are held open; iperf3 runs {} s from the watched cgroup to port 6443 (so the \
        bulk flow itself is a watched socket, the worst case), alternating lifeline off and on. CPU is \
        the whole machine's busy time (all cores, /proc/stat) per GB received.\n",
        c.iperf_secs
    )?;
    writeln!(
        s,
        "| round | lifeline | Gbit/s | CPU-s per GB |\n|---|---|---|---|"
    )?;
    for (i, r) in c.rounds.iter().enumerate() {
        writeln!(
            s,
            "| {} | {} | {:.3} | {:.3} |",
            i + 1,
            if r.agent_on { "on" } else { "off" },
            r.gbit_s,
            r.cpu_s_per_gb
        )?;
    }
    let mean = |on: bool, f: fn(&crate::cost::Round) -> f64| {
        let v: Vec<f64> = c
            .rounds
            .iter()
            .filter(|r| r.agent_on == on)
            .map(f)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (t0, t1) = (mean(false, |r| r.gbit_s), mean(true, |r| r.gbit_s));
    let (c0, c1) = (
        mean(false, |r| r.cpu_s_per_gb),
        mean(true, |r| r.cpu_s_per_gb),
    );
    writeln!(s, "\n| mean | off | on | on / off |\n|---|---|---|---|")?;
    writeln!(
        s,
        "| throughput (Gbit/s) | {t0:.3} | {t1:.3} | {:.3} |",
        t1 / t0
    )?;
    writeln!(s, "| CPU-s per GB | {c0:.3} | {c1:.3} | {:.3} |\n", c1 / c0)?;
    let ready: Vec<String> = c
        .ready
        .iter()
        .map(|d| format!("{:.2} s", d.as_secs_f64()))
        .collect();
    writeln!(
        s,
        "| the agent | CPU (% of one core) | max RSS |\n|---|---|---|"
    )?;
    writeln!(
        s,
        "| at rest, {} sockets listed by `lifeline status` | {:.2} | {:.1} MiB |",
        c.watched_seen,
        c.rest.0,
        c.rest.1 as f64 / 1024.0
    )?;
    writeln!(
        s,
        "| churn, {:.0} connects/s in the watched cgroup | {:.2} | {:.1} MiB |\n",
        c.churn_rate,
        c.churn.0,
        c.churn.1 as f64 / 1024.0
    )?;
    writeln!(
        s,
        "Start to `event=ready` (process start to the log line, each \"on\" round): {}.\n",
        ready.join(", ")
    )?;
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
