//! The targets, checked against what this run measured (never the other way round).

use crate::cells::Scenario;
use crate::contender::Contender;
use crate::cost::Cost;
use crate::costcmp::compare;
use crate::matrix::Cell;
use crate::stats::summarize;

/// Issue 23's floors, at defaults: a black-holed flow (busy, restarted or idle) healed within
/// 5 s p90, a rotated endpoint within 3 s.
const FLOW_TARGET_S: f64 = 5.0;
const ROTATION_TARGET_S: f64 = 3.0;
/// A contender that never detected within the cap counts as the cap (120 s).
const CAP_S: f64 = 120.0;

pub(crate) struct Target {
    pub what: String,
    pub measured: Option<f64>,
    pub limit: f64,
    pub unit: &'static str,
}

impl Target {
    pub(crate) fn met(&self) -> bool {
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

#[expect(clippy::cast_precision_loss, reason = "KiB to MiB")]
pub(crate) fn check(cells: &[Cell], cost: Option<&Cost>) -> Vec<Target> {
    let l = Contender::Lifeline;
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
            "detection p90, flow-only black hole, 1 s heartbeats (defaults)",
            p90(cells, Scenario::FlowOnly, l, true),
            FLOW_TARGET_S,
        ),
        mk(
            "detection p90, kubelet restarted then its flow black-holed (defaults)",
            p90(cells, Scenario::RestartedFlowOnly, l, true),
            FLOW_TARGET_S,
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
            "detection p90, ELB rotation idle watch (defaults)",
            p90(cells, Scenario::ElbRotation, l, true),
            ROTATION_TARGET_S,
        ),
    ];
    for (scenario, what) in [
        (
            Scenario::IdleWatch,
            "Go client (keepalive 30 s after connect)",
        ),
        (
            Scenario::IdleWatchGo15,
            "Go client (keepalive 15 s after connect)",
        ),
        (Scenario::IdleWatchNoKeepalive, "client without keepalive"),
    ] {
        out.push(mk(
            &format!("detection p90, idle watch flow black hole, {what} (defaults)"),
            p90(cells, scenario, l, true),
            FLOW_TARGET_S,
        ));
    }
    out.extend(ahead(cells));
    out.extend(crate::blip_targets::rows(cells, CAP_S).into_iter().map(
        |(what, measured, limit, unit)| Target {
            what,
            measured,
            limit,
            unit,
        },
    ));
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

/// Per row: lifeline's detection p90 (defaults) must be below every other contender's. The
/// limit is the best other p90 less 1 ms (`Target::met` is "at most"). A blip row detects
/// nothing: it has targets of its own (`blip_targets`).
fn ahead(cells: &[Cell]) -> Vec<Target> {
    Scenario::ALL
        .iter()
        .filter(|s| s.blip().is_none())
        .filter_map(|&s| {
            let mine = p90(cells, s, Contender::Lifeline, true)?;
            let best = cells
                .iter()
                .filter(|c| c.scenario == s && c.contender.agent().is_none())
                .map(|c| p90(cells, s, c.contender, true).unwrap_or(CAP_S))
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))?;
            Some(mk(
                &format!("detection p90 below every other contender's: {}", s.short()),
                Some(mine),
                best - 0.001,
            ))
        })
        .collect()
}

fn mk(what: &str, measured: Option<f64>, limit: f64) -> Target {
    Target {
        what: what.into(),
        measured,
        limit,
        unit: "s",
    }
}
