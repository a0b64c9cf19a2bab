//! The cost section's usual-load part (`usual.rs`), with its target.

use std::fmt::Write as _;

use anyhow::Result;

use crate::usual::{LOSS_PCT, TARGET_PCT, Usual};

#[expect(clippy::cast_precision_loss, reason = "KiB and counts for display")]
pub(crate) fn usual(s: &mut String, u: &Usual) -> Result<()> {
    writeln!(s, "### A node's usual load\n")?;
    let (through, dropped) = u.packets;
    writeln!(
        s,
        "lifeline at its defaults (`--endpoint`) watching {} connections: half idle Go-like \
        watches (keepalive 30,30,9 set after connect), half heartbeat connections (a request a \
        second), over a path that drops {LOSS_PCT} % of packets at random each way ({dropped} of \
        {through} packets dropped). The agent's CPU is sampled over {} s after {} s of settling; \
        the probe's unanswered-probe news and fast pokes are counted over the same window.\n",
        u.sockets,
        u.window.as_secs(),
        u.settle.as_secs()
    )?;
    writeln!(
        s,
        "| agent CPU (% of one core) | max RSS | unanswered-probe news/s | fast pokes/s | decisions other than holds |\n|---|---|---|---|---|"
    )?;
    writeln!(
        s,
        "| {:.3} | {:.1} MiB | {:.2} | {:.2} | {} |\n",
        u.cpu_pct,
        u.rss_kib as f64 / 1024.0,
        u.why.unanswered,
        u.why.pokes,
        u.acts
    )?;
    crate::report_more::target_rows(
        s,
        &[(
            format!(
                "agent CPU at a node's usual load ({} watched sockets, {LOSS_PCT} % loss)",
                u.sockets
            ),
            Some(u.cpu_pct),
            TARGET_PCT,
            "%",
        )],
    )
}
