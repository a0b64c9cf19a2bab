//! Percentiles of trials where some never finished within the cap ("> cap").

use std::time::Duration;

/// p50, p90 and max in ms; None: beyond the cap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Summary {
    pub n: usize,
    pub p50: Option<u64>,
    pub p90: Option<u64>,
    pub max: Option<u64>,
}

/// Nearest-rank percentiles, counting a trial beyond the cap as larger than any number.
pub(crate) fn summarize(values: &[Option<u64>]) -> Summary {
    let mut v = values.to_vec();
    v.sort_by_key(|x| x.unwrap_or(u64::MAX));
    let at = |p: f64| -> Option<u64> {
        if v.is_empty() {
            return None;
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a rank among at most a few hundred trials"
        )]
        let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    };
    Summary {
        n: v.len(),
        p50: at(0.5),
        p90: at(0.9),
        max: at(1.0),
    }
}

/// Seconds with one decimal, or `> cap`.
pub(crate) fn secs(v: Option<u64>, cap: Duration) -> String {
    match v {
        #[expect(clippy::cast_precision_loss, reason = "milliseconds of a trial")]
        Some(ms) => format!("{:.1}", ms as f64 / 1000.0),
        None => format!("> {}", cap.as_secs()),
    }
}

/// A uniform number in [0, 1) from the standard library's randomly keyed hasher.
pub(crate) fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(lifeline_tests::mono_ms());
    #[expect(clippy::cast_precision_loss, reason = "53 random bits are plenty")]
    let x = (h.finish() >> 11) as f64 / (1u64 << 53) as f64;
    x
}

#[cfg(test)]
mod tests {
    use super::summarize;

    #[test]
    fn capped_trials_rank_last() {
        let s = summarize(&[Some(3), None, Some(1), Some(2)]);
        assert_eq!((s.p50, s.p90, s.max), (Some(2), None, None));
        let all: Vec<Option<u64>> = (1..=20).map(Some).collect();
        let s = summarize(&all);
        assert_eq!((s.p50, s.p90, s.max), (Some(10), Some(18), Some(20)));
    }
}
