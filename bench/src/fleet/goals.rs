//! The goals checked against the run, and the measured curve carried to 5,000 nodes.

use std::fmt::Write as _;

use super::Machine;
use super::contender::Contender;
use super::raw::Raw;
use super::scenario::Scenario;
use super::tally::Tally;

const BIG: f64 = 5000.0;

fn find(results: &[(Raw, Vec<Tally>)], s: Scenario, c: Contender) -> Option<&Tally> {
    let (_, t) = results.iter().find(|(r, _)| r.scenario == s)?;
    t.iter().find(|t| t.contender == c)
}

pub(super) fn write(s: &mut String, m: &Machine, results: &[(Raw, Vec<Tally>)]) {
    let n = m.per_contender;
    let _ = writeln!(s, "### Goals\n\n| goal | measured | |\n|---|---|---|");
    for sc in [Scenario::Scaling, Scenario::Sudden, Scenario::FlowOnly] {
        if let Some(t) = find(results, sc, Contender::Lifeline) {
            let ok = t.not_ready_total == 0;
            let verdict = if ok {
                "met".into()
            } else {
                format!("missed by {} nodes", t.not_ready_total)
            };
            let _ = writeln!(
                s,
                "| 0 NotReady with lifeline in {} | {} of {n} ({} of them on api1 at the fault; \
                 no agent: {} NotReady) | {verdict} |",
                sc.label(),
                t.not_ready_total,
                t.on_server[0],
                find(results, sc, Contender::NoAgent).map_or(0, |t| t.not_ready_total)
            );
        }
    }
    let a = find(results, Scenario::Scaling, Contender::Lifeline);
    if let Some(t) = a {
        let peak = Tally::peak(&t.reconnects);
        let goal = n.div_ceil(10);
        let verdict = if peak <= goal {
            "met".into()
        } else {
            format!("missed by {} /s", peak - goal)
        };
        let _ = writeln!(
            s,
            "| (a) reconnect peak <= N/10 = {goal} /s | {peak} /s | {verdict} |"
        );
    }
    if let Some(t) = find(results, Scenario::ControlPlaneDown, Contender::Lifeline) {
        let verdict = if t.kills_in_outage == 0 {
            "met"
        } else {
            "missed"
        };
        let _ = writeln!(
            s,
            "| (d) no kill during the outage | {} kills | {verdict} |",
            t.kills_in_outage
        );
        if let Some([one, none, more]) = t.after_second {
            let verdict = if one == n {
                "met".into()
            } else {
                format!("missed: {none} none, {more} more than one")
            };
            let _ = writeln!(
                s,
                "| (d) exactly one reconnect per node afterwards | {one} of {n} | {verdict} |"
            );
            if none > 0 {
                why_d(s, t, none);
            }
        }
    }
    s.push('\n');
    big(s, n, results);
}

/// Why some lifeline nodes did not reconnect once after the outage, from what was measured.
fn why_d(s: &mut String, t: &Tally, none: usize) {
    let at_end = t.not_ready.last().copied().unwrap_or(0);
    let _ = writeln!(
        s,
        "\n(d), why: every agent held while nothing was healthy, and killed after the recovery \
         only the sockets still stalled when its guard saw an address accept again. On {none} \
         nodes the client's own retransmission reached the server first, so its data was \
         acknowledged and the socket was no longer stalled: no kill, no reconnect. That is \
         not always a recovery: the server's replies on such a connection wait for the \
         server's own retransmission back-off (up to about 2 minutes after a 60 s outage), \
         which no client-side signal shows, since the client's data is acknowledged and its \
         keepalive probes are answered. {at_end} lifeline nodes were NotReady at the end of \
         the window for that reason (no agent: the same effect on every node)."
    );
}

/// The measured curve carried to 5,000 nodes, and the settings for that size.
#[expect(clippy::cast_precision_loss, reason = "node counts and rates")]
fn big(s: &mut String, n: usize, results: &[(Raw, Vec<Tally>)]) {
    let a = find(results, Scenario::Scaling, Contender::Lifeline);
    let _ = writeln!(s, "### Carried to 5,000 nodes\n");
    let per_node = |sc: Scenario, c: Contender| {
        find(results, sc, c).map_or(0.0, |t| t.dns_qps / n.max(1) as f64)
    };
    let (with, without) = (
        per_node(Scenario::Sudden, Contender::Lifeline),
        per_node(Scenario::Sudden, Contender::NoAgent),
    );
    let dig = per_node(Scenario::Sudden, Contender::DigScript);
    let _ = writeln!(
        s,
        "- **DNS.** In (b) a lifeline node asked {with:.3} queries/s (agent and client; a node \
         without an agent {without:.3}, a dig-script node {dig:.3}). At 5,000 nodes: {:.0} q/s \
         from the agents against the cluster DNS ({:.0} q/s from the dig script). The agent \
         re-resolves at every TTL (5 s here, A and AAAA), so the rate is 2 x nodes / TTL: with \
         a node-local DNS cache in front (NodeLocal DNSCache) the upstream sees one query per \
         node cache per TTL, or `--min-refresh 30s` cuts it six-fold; an address is only \
         orphaned after `--orphan-grace` (30 s) anyway, so a 30 s refresh delays no decision \
         by more than the grace it already waits.",
        (with - without).max(0.0) * BIG,
        dig * BIG
    );
    if let Some(t) = find(results, Scenario::Sudden, Contender::Lifeline) {
        let probes: usize = t.probes.iter().sum();
        let per = probes as f64 / n.max(1) as f64 / t.probes.len().max(1) as f64;
        let _ = writeln!(
            s,
            "- **Probe connections.** In (b) lifeline's agents opened {probes} connections \
             that carried no request (their checks that an endpoint address accepts, before \
             and after kills), {per:.3} /s per node on average, peak {} /s for the {n} nodes: \
             about {:.0} /s at 5,000 nodes in the same event, TCP handshakes only (no TLS, no \
             request), which the API servers' accept queues carry.",
            Tally::peak(&t.probes),
            per * BIG
        );
    }
    if let Some(t) = a {
        let moved: usize = t.reconnects.iter().sum();
        let frac = moved as f64 / n.max(1) as f64;
        let spread = 60.0;
        let mean = frac * BIG / spread;
        let peak = mean + 3.0 * mean.sqrt();
        let _ = writeln!(
            s,
            "- **Reconnects in a scaling event.** In (a) {moved} new connections came from \
             {n} lifeline nodes ({:.0}% of the nodes: those that were on the leaving address, \
             and any that moved twice) over the window; measured peak {} /s, p99 {} /s. \
             Migrations are spread uniformly over `--migrate-spread` (60 s) after the 30 s \
             grace, so at 5,000 nodes about {:.0} nodes move, {mean:.0} /s on average and \
             about {peak:.0} /s at the peak (mean + 3 sigma of a Poisson count) — {:.0}% of \
             the N/10 = 500 /s goal. Sockets still on the address when it black-holes (grace \
             + spread = 90 s > the balancer's 60 s here) are killed as stalled instead, 10-20 s \
             after their next heartbeat, which is also spread by the heartbeat phases.",
            frac * 100.0,
            Tally::peak(&t.reconnects),
            Tally::p99(&t.reconnects),
            frac * BIG,
            peak / 500.0 * 100.0
        );
    }
    let _ = writeln!(
        s,
        "- **Settings at 5,000 nodes.** `--orphan-grace 30s` (default) and `--migrate-spread` \
         = the balancer's deregistration delay minus the grace (AWS ELB/NLB default 300 s: \
         `--migrate-spread 270s`), so every orphan moves before its address goes dark and the \
         wave is about 5,000 / 3 / 270 ≈ 6 /s; keep `--stall-timeout 10s` and the keepalive \
         defaults (they bound a sudden loss at 10-20 s per node, well inside the 40 s grace); \
         `--min-refresh 30s` or a node-local DNS cache for the DNS load above."
    );
}
