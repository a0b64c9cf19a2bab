//! The blip rows' part of docs/BENCHMARKS.md (`crate::blip`): what they ask, then per row and
//! contender when the clients were served again and how many of their connections, each of
//! which would have recovered by itself, were closed and re-dialed.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Result;

use crate::blip_stats::summarize_blips;
use crate::cells::Scenario;
use crate::contender::Contender;
use crate::matrix::{Cell, Plan};
use crate::stats::secs;

/// The paragraph on how the blip rows are run and read, when the run has any.
pub(crate) fn intro(s: &mut String, plan: &Plan) -> Result<()> {
    let Some(first) = plan.scenarios.iter().find(|r| r.blip().is_some()) else {
        return Ok(());
    };
    let together = first.clients_per_lab(Contender::Lifeline, plan.quick);
    writeln!(
        s,
        "The blip rows (issue 33) ask the opposite question: api1, the only API address (in the \
        last row one of two in DNS), is black-holed both ways for 1, 3, 6 or 15 s, then healed, \
        DNS unchanged (a link flap, a balancer failover, a VM paused for live migration), while \
        each client sends a heartbeat a second on its one connection. Nothing needs healing: the \
        kernel retransmits on its own schedule and every connection recovers by itself once the \
        path is back. Per trial: **served again**, the blip's start to the client's first \
        answered heartbeat after it (on its original connection once the path is back, or on a \
        new one at any time); **re-dials**, the connections it made after the blip began, each \
        replacing one that would have recovered (a fleet's reconnects per node per blip), with \
        who closed the old one: lifeline's kills, the client's own timeout \
        (`TCP_USER_TIMEOUT`'s `ETIMEDOUT`, the HTTP/2 PING) or the dig script's restarts. The \
        blip starts at a random moment of each client's heartbeat cycle (the clients start \
        spread over one interval, the blip comes after a random delay), so a row is a \
        distribution over phases. A lab is watched until every client was served again, and \
        at least 10 s after the heal (a finding of the agent's peer probe stands 10 s) and 2 s \
        after the last client was served. An agent's lab holds {together} clients in the \
        whole-path rows (a node's clients of the endpoint live through a blip together) and \
        one in the one-of-two row (a dead-peer kill covers every socket to the peer).\n"
    )?;
    Ok(())
}

/// The blip tables, when the run has blip cells.
pub(crate) fn section(s: &mut String, cells: &[Cell], cap: Duration) -> Result<()> {
    if !cells.iter().any(|c| c.scenario.blip().is_some()) {
        return Ok(());
    }
    writeln!(
        s,
        "## Blips: served again, and connections closed that would have recovered\n"
    )?;
    writeln!(
        s,
        "Served again: seconds from the blip's start (p50 / p90 / max). Re-dials: per trial \
        (the mean, a fleet's reconnects per node per blip), trials with any, the most in one \
        trial; then who closed the connections, summed over the trials.\n"
    )?;
    for scenario in Scenario::ALL.into_iter().filter(|r| r.blip().is_some()) {
        let row: Vec<&Cell> = cells.iter().filter(|c| c.scenario == scenario).collect();
        if row.is_empty() {
            continue;
        }
        writeln!(s, "### {}\n", scenario.name())?;
        writeln!(
            s,
            "| contender | trials | served again p50 | p90 | max | re-dials per trial | trials re-dialed | most | lifeline kills | own closes | script restarts | notes |"
        )?;
        writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|")?;
        for contender in Contender::ALL {
            let Some(c) = row.iter().find(|c| c.contender == contender) else {
                continue;
            };
            let mut notes = crate::measure::merged(&c.agent_notes);
            notes.extend(
                c.errors
                    .iter()
                    .map(|e| format!("lab failed: {}", e.replace('\n', " "))),
            );
            let Some(b) = summarize_blips(&c.trials) else {
                writeln!(
                    s,
                    "| {} | 0 | - | - | - | - | - | - | - | - | - | {} |",
                    contender.name(),
                    notes.join("; ")
                )?;
                continue;
            };
            writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} |",
                contender.name(),
                b.served.n,
                secs(b.served.p50, cap),
                secs(b.served.p90, cap),
                secs(b.served.max, cap),
                b.redials_per_trial(),
                b.redialed_trials,
                b.most_redials,
                b.kills,
                b.own_closes,
                b.restarts,
                notes.join("; ")
            )?;
        }
        writeln!(s)?;
    }
    Ok(())
}
