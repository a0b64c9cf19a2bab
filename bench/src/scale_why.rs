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
    softirq_ms: u64,
    /// Each CPU's softirq time so far, ms.
    softirq_cpus: Vec<u64>,
}

/// Per second over a window.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rates {
    pub unanswered: f64,
    pub pokes: f64,
    pub drops: f64,
    /// The host's time in softirqs (its packets and timers), % of one core: without
    /// `CONFIG_IRQ_TIME_ACCOUNTING` the kernel charges a softirq to the task it interrupted
    /// (`account_system_index_time()`,
    /// <https://github.com/torvalds/linux/blob/v6.18/kernel/sched/cputime.c>), so some of it
    /// lands in the agent's CPU time.
    pub softirq_pct: f64,
    /// The same on the busiest CPU, % of that CPU (the lab's veths have no RPS: a packet is
    /// handled on the CPU that sent it).
    pub softirq_busiest_pct: f64,
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
            softirq_ms: softirq_ms()?,
            softirq_cpus: softirq_cpus_ms()?,
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
            softirq_pct: later.softirq_ms.saturating_sub(self.softirq_ms) as f64 / s / 10.0,
            softirq_busiest_pct: later
                .softirq_cpus
                .iter()
                .zip(&self.softirq_cpus)
                .map(|(b, a)| b.saturating_sub(*a))
                .max()
                .unwrap_or(0) as f64
                / s
                / 10.0,
        }
    }
}

/// Packets dropped at the input queue so far, all CPUs (the counters are the host's: the
/// file is the same in every namespace).
fn softnet_drops() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/net/softnet_stat").context("softnet_stat")?;
    Ok(parse(&text))
}

/// The host's softirq time so far, all CPUs, ms (`/proc/stat`'s `cpu` line, 7th value, in
/// `USER_HZ` ticks of 10 ms).
fn softirq_ms() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/stat").context("/proc/stat")?;
    stat_ms(&text, 7).context("no softirq time in /proc/stat")
}

/// Each CPU's softirq time so far, ms (the `cpuN` lines).
fn softirq_cpus_ms() -> Result<Vec<u64>> {
    let text = std::fs::read_to_string("/proc/stat").context("/proc/stat")?;
    Ok(per_cpu_ms(&text, 7))
}

fn per_cpu_ms(text: &str, at: usize) -> Vec<u64> {
    text.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .filter_map(|l| stat_ms(l, at))
        .collect()
}

/// The `cpu` line's value `at` (1: user, ..., 7: softirq, 8: steal) in ms.
pub(crate) fn stat_ms(text: &str, at: usize) -> Option<u64> {
    let ticks: u64 = text
        .lines()
        .next()?
        .split_whitespace()
        .nth(at)?
        .parse()
        .ok()?;
    Some(ticks * 10)
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

    #[test]
    fn softirq_and_steal_are_the_cpu_lines_7th_and_8th_values_in_ticks_of_10_ms() {
        let text = "cpu  5411029 1005 888089 5869908 41595 0 152881 110014 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(super::stat_ms(text, 7), Some(1_528_810));
        assert_eq!(super::stat_ms(text, 8), Some(1_100_140));
        assert_eq!(super::stat_ms("", 7), None);
        assert_eq!(super::per_cpu_ms(text, 7), vec![70]);
    }
}
