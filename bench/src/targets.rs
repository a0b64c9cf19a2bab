//! The targets, checked against what this run measured (never the other way round).

use crate::cells::{Contender, Scenario};
use crate::cost::Cost;
use crate::costcmp::compare;
use crate::matrix::Cell;
use crate::stats::summarize;

/// The agent's documented defaults the targets are stated in.
const STALL_DEFAULT_MS: u64 = 10_000;
const STALL_TIGHT_MS: u64 = 3_000;
const DNS_TTL_MS: u64 = 5_000;
/// An idle black hole, whatever keepalive the client sets: killed within 15 s p90.
const IDLE_TARGET_MS: u64 = 15_000;

pub struct Target {
    pub what: String,
    pub measured: Option<f64>,
    pub limit: f64,
    pub unit: &'static str,
}

impl Target {
    pub fn met(&self) -> bool {
        self.measured.is_some_and(|m| m <= self.limit)
    }
}

#[expect(clippy::cast_precision_loss, reason = "milliseconds to seconds")]
fn p90(cells: &[Cell], s: Scenario, c: Contender, detection: bool) -> Option<f64> {
    let cell = cells.iter().find(|x| x.scenario == s && x.contender == c)?;
    let v: Vec<Option<u64>> = cell
        .trials
        .iter()
        .map(|t| {
            if detection {
                t.detection_ms
            } else {
                t.outage_ms
            }
        })
        .collect();
    if v.is_empty() {
        return None;
    }
    summarize(&v).p90.map(|ms| ms as f64 / 1000.0)
}

#[expect(clippy::cast_precision_loss, reason = "milliseconds to seconds")]
pub fn check(cells: &[Cell], cost: Option<&Cost>) -> Vec<Target> {
    let s = |ms: u64| ms as f64 / 1000.0;
    let (l, t) = (Contender::Lifeline, Contender::LifelineTight);
    let mut out = vec![
        mk(
            "detection p90, black hole 1 s heartbeats (defaults)",
            p90(cells, Scenario::PeerGone1s, l, true),
            3.0,
        ),
        mk(
            "detection p90, black hole 10 s heartbeats (defaults)",
            p90(cells, Scenario::PeerGone10s, l, true),
            3.0,
        ),
        mk(
            "detection p90, flow-only (defaults): stall-timeout 10 s + 1 s",
            p90(cells, Scenario::FlowOnly, l, true),
            s(STALL_DEFAULT_MS + 1000),
        ),
        mk(
            "detection p90, flow-only (--stall-timeout 3s): 3 s + 1 s",
            p90(cells, Scenario::FlowOnly, t, true),
            s(STALL_TIGHT_MS + 1000),
        ),
        mk(
            "outage p90, black hole 1 s heartbeats (defaults)",
            p90(cells, Scenario::PeerGone1s, l, false),
            5.0,
        ),
        mk(
            "outage p90, black hole 10 s heartbeats (defaults)",
            p90(cells, Scenario::PeerGone10s, l, false),
            15.0,
        ),
        mk(
            "detection p90, ELB rotation idle watch: DNS TTL 5 s + 3 s",
            p90(cells, Scenario::ElbRotation, l, true),
            s(DNS_TTL_MS + 3000),
        ),
        mk(
            "detection p90, idle black hole, Go client (keepalive 30 s after connect)",
            p90(cells, Scenario::IdleWatch, l, true),
            s(IDLE_TARGET_MS),
        ),
        mk(
            "detection p90, idle black hole, Go client (keepalive 15 s after connect)",
            p90(cells, Scenario::IdleWatchGo15, l, true),
            s(IDLE_TARGET_MS),
        ),
        mk(
            "detection p90, idle black hole, client without keepalive",
            p90(cells, Scenario::IdleWatchNoKeepalive, l, true),
            s(IDLE_TARGET_MS),
        ),
    ];
    if let Some(c) = cost {
        for watched in [true, false] {
            let flow = if watched { "watched" } else { "unwatched" };
            let thr = compare(c, watched, |r| r.gbit_s);
            let cpu = compare(c, watched, |r| r.cpu_s_per_gb);
            out.push(Target {
                what: format!(
                    "throughput loss, {flow} flow (median pair; off rounds spread {:.1} %)",
                    thr.off_spread_pct
                ),
                measured: Some((1.0 - thr.median_ratio) * 100.0),
                limit: 1.0,
                unit: "%",
            });
            out.push(Target {
                what: format!(
                    "CPU per GB overhead, {flow} flow (median pair; off rounds spread {:.1} %)",
                    cpu.off_spread_pct
                ),
                measured: Some((cpu.median_ratio - 1.0) * 100.0),
                limit: 1.0,
                unit: "%",
            });
        }
        out.push(Target {
            what: "RSS at 1,000 watched sockets (at rest)".into(),
            measured: Some(c.rest.1 as f64 / 1024.0),
            limit: 24.0,
            unit: "MiB",
        });
    }
    out
}

fn mk(what: &str, measured: Option<f64>, limit: f64) -> Target {
    Target {
        what: what.into(),
        measured,
        limit,
        unit: "s",
    }
}
