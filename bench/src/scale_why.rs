//! Where the scale part's CPU goes, counted over the same window: the probe's unanswered-probe
//! news and fast pokes (the agent's metrics), and the packets the kernel dropped at its
//! per-CPU input queue (`/proc/net/softnet_stat`, second column: `netdev_max_backlog`
//! exceeded in `enqueue_to_backlog()`,
//! <https://github.com/torvalds/linux/blob/v6.18/net/core/dev.c>). Keepalive probes between
//! two namespaces of one host pass that queue both ways: a probe or answer dropped there is
//! a probe unanswered, and so news the agent must look at.

use std::time::Instant;

use anyhow::{Context, Result};
use lifeline_tests::Lab;

/// Where the agent serves its metrics, in the client's namespace.
pub(crate) const METRICS: &str = "127.0.0.1:9465";

/// The counters at one moment.
pub(crate) struct Counters {
    at: Instant,
    unanswered: f64,
    pokes: f64,
    drops: u64,
}

/// Per second over a window.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rates {
    pub unanswered: f64,
    pub pokes: f64,
    pub drops: f64,
}

impl Counters {
    pub(crate) fn read(lab: &Lab) -> Result<Self> {
        let m = lifeline_tests::assertions::metrics::scrape_until_ok(
            "the agent's metrics",
            &lab.client.path(),
            METRICS.parse()?,
        )?;
        let get = |k: &str| m.get(k).copied().unwrap_or(0.0);
        Ok(Self {
            at: Instant::now(),
            unanswered: get("lifeline_probe_unanswered_news_total"),
            pokes: get("lifeline_probe_fast_pokes_total"),
            drops: softnet_drops()?,
        })
    }

    /// Rates from `self` to `later`.
    #[expect(clippy::cast_precision_loss, reason = "counts for display")]
    pub(crate) fn to(&self, later: &Self) -> Rates {
        let s = later.at.duration_since(self.at).as_secs_f64().max(1e-3);
        Rates {
            unanswered: (later.unanswered - self.unanswered) / s,
            pokes: (later.pokes - self.pokes) / s,
            drops: later.drops.saturating_sub(self.drops) as f64 / s,
        }
    }
}

/// Packets dropped at the input queue so far, all CPUs (the counters are the host's: the
/// file is the same in every namespace).
fn softnet_drops() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/net/softnet_stat").context("softnet_stat")?;
    Ok(parse(&text))
}

fn parse(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter_map(|h| u64::from_str_radix(h, 16).ok())
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn drops_are_the_second_column_in_hex_summed_over_cpus() {
        let text = "0001e240 0000000a 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n\
                    00000100 00000010 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001\n";
        assert_eq!(super::parse(text), 10 + 16);
    }
}
