//! The soak's section of docs/BENCHMARKS.md: per phase, what was decided and who died,
//! against what the loss arithmetic predicts and the goals.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;

use crate::soak::{BUSY, IDLE, PhaseRun, Soak};
use crate::soak_math::expect;

/// Probe and answer: 52-byte IPv4 TCP segments with timestamps, each way.
const PROBE_EXCHANGE_BYTES: f64 = 104.0;
const STALL_MS: u64 = 10_000;
/// `--stall-unanswered` at its default: the count rule's RTOs in a row.
const STALL_RTOS: u64 = 8;

pub(crate) fn section(s: &Soak, commit: &str) -> Result<String> {
    let mut o = String::new();
    writeln!(o, "## Loss soak\n")?;
    writeln!(
        o,
        "`cargo xtask bench --soak` at commit `{commit}`: {} minutes of lifeline at its defaults \
         (`--endpoint 198.51.100.2:6443`) watching {IDLE} idle connections of Go-like clients \
         (keepalive 30,30,9 set after connect, held at 1s,1s,20 by the setsockopt hook), {BUSY} \
         heartbeat connections (one request a second), an iperf3 flow at 50 Mbit/s and its idle \
         control connection, over a path that drops packets at random each way (nft `numgen`). \
         Every client re-dials after an error. Predictions are the upper bounds of \
         docs/ARCHITECTURE.md, \"Idle connections\".\n",
        s.minutes
    )?;
    writeln!(
        o,
        "| phase | dropped / packets | keepalive probes (per idle socket per s; bytes/s) | decisions | client deaths | predicted: silent / kernel abort / dead peer / stalled | goal | met |"
    )?;
    writeln!(o, "|---|---|---|---|---|---|---|---|")?;
    for (i, p) in s.phases.iter().enumerate() {
        row(&mut o, s, i, p)?;
    }
    let bulk = s.bulk_end.as_ref().map_or_else(
        || "ran to the end".to_owned(),
        |(ms, why)| {
            let secs = std::time::Duration::from_millis(*ms).as_secs_f64();
            format!("ended after {secs:.0} s: {why}")
        },
    );
    writeln!(o, "\nThe iperf3 flow {bulk}.\n")?;
    kills(&mut o, s)?;
    Ok(o)
}

/// Every kill with its evidence: when (seconds into the soak), what, and how long nothing had
/// come back, so each one can be checked against its verdict's rule.
fn kills(o: &mut String, s: &Soak) -> Result<()> {
    let start = s.phases.first().map_or(0, |p| p.from_ms);
    let kills: Vec<_> = s.decisions.iter().filter(|d| d.action == "kill").collect();
    if kills.is_empty() {
        return Ok(());
    }
    writeln!(
        o,
        "| s into the soak | verdict | outcome | local -> peer | nothing back for (ms) | retransmits | RTOs in a row |"
    )?;
    writeln!(o, "|---|---|---|---|---|---|---|")?;
    for d in kills {
        let rtos = d
            .unanswered_rtos
            .map_or_else(|| "?".to_owned(), |r| r.to_string());
        let age = d
            .last_ack_age_ms
            .map_or_else(|| "?".to_owned(), |a| a.to_string());
        let re = d
            .retransmits
            .map_or_else(|| "?".to_owned(), |r| r.to_string());
        writeln!(
            o,
            "| {} | {} | {} | {} -> {} | {age} | {re} | {rtos} |",
            d.at_ms.saturating_sub(start) / 1000,
            d.verdict,
            d.outcome,
            d.local,
            d.peer
        )?;
    }
    Ok(())
}

/// An observed count is within an expected (Poisson) one: at most its value plus three
/// standard deviations plus 3.
#[expect(clippy::cast_precision_loss, reason = "counts")]
fn within(seen: usize, expected: f64) -> bool {
    seen as f64 <= expected + 3.0 * expected.sqrt() + 3.0
}

fn in_phase(p: &PhaseRun, ms: u64) -> bool {
    (p.from_ms..p.to_ms).contains(&ms)
}

fn row(out: &mut String, soak: &Soak, index: usize, p: &PhaseRun) -> Result<()> {
    let decisions: Vec<_> = soak
        .decisions
        .iter()
        .filter(|d| in_phase(p, d.at_ms))
        .collect();
    let mut by: BTreeMap<String, u32> = BTreeMap::new();
    for d in &decisions {
        *by.entry(format!("{} {}: {}", d.verdict, d.action, d.outcome))
            .or_default() += 1;
    }
    let mut deaths: BTreeMap<String, u32> = BTreeMap::new();
    for (group, ms, err) in &soak.deaths {
        if in_phase(p, *ms) {
            let errno = err.split(':').next().unwrap_or(err);
            *deaths.entry(format!("{group} {errno}")).or_default() += 1;
        }
    }
    // Every stall needs its evidence: 8 RTOs in a row, or 10 s without an ACK (with the RTOs
    // that fit in it; the agent checks those, the log carries both).
    let stalls: Vec<_> = decisions
        .iter()
        .filter(|d| d.verdict == "stalled" && d.action == "kill")
        .collect();
    let short_stall = stalls.iter().any(|d| {
        d.unanswered_rtos.is_none_or(|r| r < STALL_RTOS)
            && d.last_ack_age_ms.is_none_or(|a| a < STALL_MS)
    });
    let kernel_aborts = deaths
        .iter()
        .filter(|(k, _)| k.contains("ETIMEDOUT"))
        .map(|(_, n)| n)
        .sum::<u32>();
    let total_deaths: u32 = deaths.values().sum();
    let e = expect(&p.phase, IDLE + 1, BUSY);
    let (goal, met) = match index {
        0 | 1 => (
            "no decision, no client death",
            decisions.is_empty() && total_deaths == 0 && kernel_aborts == 0,
        ),
        _ => (
            "stalled only on 8 RTOs in a row or 10 s without ACK; stalled kills within the prediction (at most its value + 3 x its square root + 3)",
            !short_stall && within(stalls.len(), e.stalled),
        ),
    };
    #[expect(clippy::cast_precision_loss, reason = "counts")]
    let secs = (p.phase.to_s - p.phase.from_s) as f64;
    #[expect(clippy::cast_precision_loss, reason = "counts")]
    let per = p.keepalive_probes as f64 / secs / (IDLE + 1) as f64;
    let list = |m: &BTreeMap<String, u32>| {
        if m.is_empty() {
            "none".to_owned()
        } else {
            m.iter()
                .map(|(k, n)| format!("{k} x{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    writeln!(
        out,
        "| {} | {} / {} | {} ({per:.2}; {:.0}) | {} | {} | {:.1e} / {:.1e} / {:.1e} / {:.2} | {goal} | {} |",
        p.phase.name,
        p.packets.1,
        p.packets.0,
        p.keepalive_probes,
        per * PROBE_EXCHANGE_BYTES,
        list(&by),
        list(&deaths),
        e.silent,
        e.kernel_abort,
        e.dead_peer,
        e.stalled,
        if met { "yes" } else { "**no**" },
    )?;
    Ok(())
}
