//! Issue 33's targets for the blip rows, at lifeline's defaults: a whole-path blip costs
//! nothing (no connection closed, so no re-dial) and serves every client again no later than
//! the kernel alone, within 0.5 s at the p90. The one-of-two row is held to the second: a
//! node with lifeline is never served later than without it.

use crate::blip_stats::{BlipSummary, summarize_blips};
use crate::cells::Scenario;
use crate::contender::Contender;
use crate::matrix::Cell;

/// How much later than kernel defaults' p90 lifeline's may be (issue 33, item 2).
const SERVED_MARGIN_S: f64 = 0.5;

/// (what, measured, limit, unit) per target; a row not in the run has none.
pub(crate) fn rows(cells: &[Cell], cap_s: f64) -> Vec<(String, Option<f64>, f64, &'static str)> {
    let mut out = Vec::new();
    for scenario in Scenario::ALL {
        let Some(spec) = scenario.blip() else {
            continue;
        };
        let (Some(mine), Some(kernel)) = (
            summary(cells, scenario, Contender::Lifeline),
            summary(cells, scenario, Contender::NoAgent),
        ) else {
            continue;
        };
        let secs = spec.len.as_secs();
        let what = if spec.one_of_two {
            format!("one address of two black-holed {secs} s")
        } else {
            format!("whole-path blip of {secs} s")
        };
        if !spec.one_of_two {
            out.push((
                format!("connections closed (re-dials) by lifeline (defaults), {what}"),
                Some(f64::from(mine.redials.max(mine.kills))),
                0.0,
                "re-dials",
            ));
        }
        let kernel_p90 = p90_s(&kernel).unwrap_or(cap_s);
        out.push((
            format!(
                "served again p90, {what}: lifeline (defaults) no later than kernel defaults ({kernel_p90:.2} s) + {SERVED_MARGIN_S} s"
            ),
            p90_s(&mine),
            kernel_p90 + SERVED_MARGIN_S,
            "s",
        ));
    }
    out
}

fn summary(cells: &[Cell], s: Scenario, c: Contender) -> Option<BlipSummary> {
    let cell = cells.iter().find(|x| x.scenario == s && x.contender == c)?;
    summarize_blips(&cell.trials)
}

#[expect(clippy::cast_precision_loss, reason = "milliseconds to seconds")]
fn p90_s(b: &BlipSummary) -> Option<f64> {
    b.served.p90.map(|ms| ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::rows;
    use crate::cells::Scenario;
    use crate::contender::Contender;
    use crate::matrix::Cell;
    use crate::measure::{BlipTrial, TrialResult};

    fn cell(scenario: Scenario, contender: Contender, served: &[u64], kills: u32) -> Cell {
        let trials = served
            .iter()
            .map(|&ms| TrialResult {
                detection_ms: None,
                outage_ms: None,
                blip: Some(BlipTrial {
                    served_again_ms: Some(ms),
                    redials: kills,
                    kills,
                    ..BlipTrial::default()
                }),
            })
            .collect();
        Cell {
            scenario,
            contender,
            trials,
            agent_notes: Vec::new(),
            errors: Vec::new(),
        }
    }

    #[test]
    fn a_whole_path_blip_is_held_to_no_close_and_the_kernels_p90_plus_half_a_second() {
        let cells = [
            cell(Scenario::Blip3s, Contender::NoAgent, &[3_400, 4_000], 0),
            cell(Scenario::Blip3s, Contender::Lifeline, &[3_500, 4_400], 1),
            cell(Scenario::BlipOneOfTwo3s, Contender::NoAgent, &[3_900], 0),
            cell(Scenario::BlipOneOfTwo3s, Contender::Lifeline, &[3_200], 1),
        ];
        let got = rows(&cells, 120.0);
        let met: Vec<(bool, &str)> = got
            .iter()
            .map(|(what, m, limit, _)| (m.is_some_and(|m| m <= *limit), what.as_str()))
            .collect();
        // The kill misses; 4.4 s is within 4.0 + 0.5; the one-of-two row's kill is its
        // trade (no close target), its served-again p90 is held like the others.
        assert_eq!(got.len(), 3, "{met:?}");
        assert!(!met[0].0 && met[0].1.contains("re-dials"), "{met:?}");
        assert!(met[1].0 && met[2].0, "{met:?}");
        assert!((got[1].2 - 4.5).abs() < 1e-9, "{got:?}");
    }
}
