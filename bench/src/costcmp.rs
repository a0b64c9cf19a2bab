//! Lifeline off against on, from the alternating iperf3 rounds of one flow kind. Rounds next
//! to each other form a pair (off, then on), so slow drifts of the machine (other work on
//! the two cores) hit both halves of a pair alike; the median of the pairs' ratios is the
//! verdict, and the spread of the "off" rounds says how much noise the machine had.

use crate::cost::{Cost, Round};

pub(crate) struct Compare {
    pub off: f64,
    pub on: f64,
    /// Median over the pairs of on / off.
    pub median_ratio: f64,
    /// (max - min) / mean of the "off" rounds, in %: what a difference must beat.
    pub off_spread_pct: f64,
}

#[expect(clippy::cast_precision_loss, reason = "a handful of rounds")]
pub(crate) fn compare(c: &Cost, watched: bool, f: fn(&Round) -> f64) -> Compare {
    let rounds: Vec<&Round> = c.rounds.iter().filter(|r| r.watched == watched).collect();
    let pick = |on: bool| -> Vec<f64> {
        rounds
            .iter()
            .filter(|r| r.agent_on == on)
            .map(|r| f(r))
            .collect()
    };
    let (off, on) = (pick(false), pick(true));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut ratios: Vec<f64> = off.iter().zip(&on).map(|(a, b)| b / a).collect();
    ratios.sort_by(f64::total_cmp);
    let median_ratio = match ratios.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => ratios[n / 2],
        n => f64::midpoint(ratios[n / 2 - 1], ratios[n / 2]),
    };
    let max = off.iter().copied().fold(f64::MIN, f64::max);
    let min = off.iter().copied().fold(f64::MAX, f64::min);
    Compare {
        off: mean(&off),
        on: mean(&on),
        median_ratio,
        off_spread_pct: (max - min) / mean(&off) * 100.0,
    }
}
