//! A blip cell's numbers (`crate::blip`): when its clients were served again, and how many of
//! their connections, each of which would have recovered by itself, were closed and re-dialed.

use std::time::Duration;

use crate::measure::TrialResult;
use crate::stats::{Summary, secs, summarize};

/// Over a cell's trials.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlipSummary {
    /// The blip's start to served again (ms), p50 / p90 / max.
    pub served: Summary,
    /// Re-dials, all trials together (a fleet's reconnects per node per blip, summed).
    pub redials: u32,
    /// Trials with at least one re-dial, and the most re-dials of one trial.
    pub redialed_trials: usize,
    pub most_redials: u32,
    /// Who closed the connections: lifeline, the client's own timeout, the dig script.
    pub kills: u32,
    pub own_closes: u32,
    pub restarts: u32,
}

impl BlipSummary {
    /// Re-dials per trial, the mean.
    #[must_use]
    pub(crate) fn redials_per_trial(&self) -> f64 {
        f64::from(self.redials) / f64::from(u32::try_from(self.served.n.max(1)).unwrap_or(1))
    }

    /// The progress line of one lab.
    #[must_use]
    pub(crate) fn progress(&self, cap: Duration) -> String {
        format!(
            "{} trials, served again p50 {} s, p90 {} s, max {} s, re-dials {} (lifeline kills {}, own closes {}, script restarts {})",
            self.served.n,
            secs(self.served.p50, cap),
            secs(self.served.p90, cap),
            secs(self.served.max, cap),
            self.redials,
            self.kills,
            self.own_closes,
            self.restarts
        )
    }
}

/// The blip numbers of `trials`; None when none is a blip trial.
#[must_use]
pub(crate) fn summarize_blips(trials: &[TrialResult]) -> Option<BlipSummary> {
    let blips: Vec<_> = trials.iter().filter_map(|t| t.blip).collect();
    if blips.is_empty() {
        return None;
    }
    let served: Vec<Option<u64>> = blips.iter().map(|b| b.served_again_ms).collect();
    let sum = |f: fn(&crate::measure::BlipTrial) -> u32| blips.iter().map(f).sum::<u32>();
    Some(BlipSummary {
        served: summarize(&served),
        redials: sum(|b| b.redials),
        redialed_trials: blips.iter().filter(|b| b.redials > 0).count(),
        most_redials: blips.iter().map(|b| b.redials).max().unwrap_or(0),
        kills: sum(|b| b.kills),
        own_closes: sum(|b| b.own_closes),
        restarts: sum(|b| b.restarts),
    })
}

#[cfg(test)]
mod tests {
    use super::summarize_blips;
    use crate::measure::{BlipTrial, TrialResult};

    fn t(served: Option<u64>, redials: u32, kills: u32) -> TrialResult {
        TrialResult {
            detection_ms: None,
            outage_ms: None,
            blip: Some(BlipTrial {
                served_again_ms: served,
                redials,
                kills,
                ..BlipTrial::default()
            }),
        }
    }

    #[test]
    fn redials_are_counted_per_trial_and_a_trial_never_served_ranks_last() {
        let s = summarize_blips(&[t(Some(3_000), 0, 0), t(None, 2, 2), t(Some(4_000), 1, 1)])
            .expect("blip trials");
        assert_eq!((s.redials, s.redialed_trials, s.most_redials), (3, 2, 2));
        assert_eq!(
            (s.kills, s.served.p50, s.served.max),
            (3, Some(4_000), None)
        );
        assert!((s.redials_per_trial() - 1.0).abs() < 1e-9);
        let plain = TrialResult {
            detection_ms: Some(1),
            outage_ms: Some(2),
            blip: None,
        };
        assert!(summarize_blips(&[plain]).is_none());
    }
}
