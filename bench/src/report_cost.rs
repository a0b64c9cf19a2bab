//! The report's cost section.

use std::fmt::Write as _;

use anyhow::Result;

use crate::cost::{Cost, Round};
use crate::costcmp::compare;

/// One measure of a round, with its name.
type Measure = (&'static str, fn(&Round) -> f64);

#[expect(clippy::cast_precision_loss, reason = "KiB for display")]
pub(crate) fn cost(s: &mut String, c: &Cost) -> Result<()> {
    writeln!(s, "## Cost\n")?;
    writeln!(
        s,
        "1,000 watched connections (in the watched cgroup, to port 6443) and 10,000 unwatched \
        ones (outside it) are held open. iperf3 runs {} s to port 6443 twice per round: from the \
        watched cgroup (the bulk flow is itself a watched socket, armed and with keepalive: the \
        worst case, though no callback runs per ACK) and from outside it (an unwatched flow, \
        which must cost nothing). Rounds alternate lifeline off and on. CPU is the whole \
        machine's busy time (all cores, /proc/stat) per GB received; other work on the machine \
        (other benchmarks, lab tests) is in it too, and in the per-hook counts below, since the \
        programs on the cgroup root see every socket of the host.\n",
        c.iperf_secs
    )?;
    writeln!(
        s,
        "| round | lifeline | flow | Gbit/s | CPU-s per GB |\n|---|---|---|---|---|"
    )?;
    for (i, r) in c.rounds.iter().enumerate() {
        writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.3} |",
            i / 2 + 1,
            if r.agent_on { "on" } else { "off" },
            if r.watched { "watched" } else { "unwatched" },
            r.gbit_s,
            r.cpu_s_per_gb
        )?;
    }
    writeln!(
        s,
        "\n| flow, measure | off (mean) | on (mean) | on / off (median of pairs) | spread of the off rounds |"
    )?;
    writeln!(s, "|---|---|---|---|---|")?;
    let measures: [Measure; 2] = [
        ("Gbit/s", |r| r.gbit_s),
        ("CPU-s per GB", |r| r.cpu_s_per_gb),
    ];
    for watched in [true, false] {
        for (name, f) in measures {
            let m = compare(c, watched, f);
            let flow = if watched { "watched" } else { "unwatched" };
            writeln!(
                s,
                "| {flow}, {name} | {:.3} | {:.3} | {:.3} | {:.1} % |",
                m.off, m.on, m.median_ratio, m.off_spread_pct
            )?;
        }
    }
    let ready: Vec<String> = c
        .ready
        .iter()
        .map(|d| format!("{:.2} s", d.as_secs_f64()))
        .collect();
    writeln!(
        s,
        "\n| the agent | CPU (% of one core) | max RSS |\n|---|---|---|"
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
