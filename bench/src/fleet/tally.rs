//! The fleet's numbers, per scenario and contender, from the servers' view: a node is
//! `NotReady` while its last heartbeat is more than 40 s old (the node-monitor grace), healthy
//! while it is at most 15 s old (one 10 s heartbeat period and slack); reconnects and
//! re-lists are counted in 1 s windows from the first step to the end of the window.

use super::contender::Contender;
use super::raw::{Raw, secs};

pub(super) const NOT_READY_MS: u64 = 40_000;
pub(super) const HEALTHY_MS: u64 = 15_000;

/// One contender in one scenario.
pub(super) struct Tally {
    pub contender: Contender,
    pub nodes: usize,
    /// `NotReady` nodes at each second from the first step.
    pub not_ready: Vec<usize>,
    /// Nodes that were `NotReady` at some moment of the window.
    pub not_ready_total: usize,
    /// Seconds from the first step until every node stays healthy; None: not in the window.
    pub all_healthy_s: Option<u64>,
    /// New client connections and re-lists per 1 s window.
    pub reconnects: Vec<usize>,
    /// Connections that carried no request (the agents' probes of the endpoint) per 1 s.
    pub probes: Vec<usize>,
    pub relists: Vec<usize>,
    pub kills: usize,
    /// Kills while the control plane was down (d only).
    pub kills_in_outage: usize,
    pub restarts: usize,
    /// After the second step: how many nodes reconnected exactly once, never, more often.
    pub after_second: Option<[usize; 3]>,
    pub dns_qps: f64,
    pub never_started: usize,
    /// Nodes on api1, api2, api3 when the first step came.
    pub on_server: [usize; 3],
}

impl Tally {
    pub(super) fn of(raw: &Raw, contender: Contender, nodes: &[usize]) -> Self {
        let n_secs = usize::try_from((raw.end - raw.t0) / 1000).unwrap_or(0);
        let mine = |v: &[(u64, usize)]| -> Vec<(u64, usize)> {
            v.iter()
                .copied()
                .filter(|(_, k)| nodes.contains(k))
                .collect()
        };
        let beats = mine(&raw.heartbeats);
        let (mut not_ready, mut unhealthy_until) = (vec![0; n_secs], None);
        let mut ever = vec![false; nodes.len()];
        for (t, count) in not_ready.iter_mut().enumerate() {
            let now = raw.t0 + 1000 * (u64::try_from(t).unwrap_or(0) + 1);
            for (i, &k) in nodes.iter().enumerate() {
                let last = beats
                    .iter()
                    .filter(|&&(ms, j)| j == k && ms <= now)
                    .map(|b| b.0)
                    .max();
                let age = last.map_or(u64::MAX, |l| now - l);
                if age > NOT_READY_MS {
                    *count += 1;
                    ever[i] = true;
                }
                if age > HEALTHY_MS {
                    unhealthy_until = Some(t + 1);
                }
            }
        }
        let all_healthy_s = match unhealthy_until {
            None => Some(0),
            Some(t) if t < n_secs => Some(t as u64),
            Some(_) => None,
        };
        let kills = mine(&raw.kills);
        let outage_end = raw.second.unwrap_or(raw.end);
        let after_second = raw
            .second
            .filter(|_| raw.scenario.second_step_s().is_some())
            .map(|at| {
                let acc = mine(&raw.client_conns);
                let mut n = [0; 3];
                for &k in nodes {
                    let c = acc.iter().filter(|&&(ms, j)| j == k && ms >= at).count();
                    n[c.min(2)] += 1;
                }
                [n[1], n[0], n[2]]
            });
        let dns: usize = nodes.iter().map(|&k| raw.dns_queries[k]).sum();
        Self {
            contender,
            nodes: nodes.len(),
            not_ready,
            not_ready_total: ever.iter().filter(|&&e| e).count(),
            all_healthy_s,
            reconnects: per_second(&mine(&raw.client_conns), raw.t0, n_secs),
            probes: per_second(&mine(&raw.probes), raw.t0, n_secs),
            relists: per_second(&mine(&raw.watches), raw.t0, n_secs),
            kills: kills.len(),
            kills_in_outage: kills.iter().filter(|&&(ms, _)| ms < outage_end).count(),
            restarts: nodes.iter().map(|&k| raw.restarts[k]).sum(),
            after_second,
            dns_qps: f64::from(u32::try_from(dns).unwrap_or(u32::MAX)) / secs(raw.end - raw.t0),
            never_started: raw.never_started,
            on_server: nodes.iter().fold([0; 3], |mut acc, &k| {
                if let Some(i) = raw.on_server[k] {
                    acc[i.min(2)] += 1;
                }
                acc
            }),
        }
    }

    pub(super) fn peak(v: &[usize]) -> usize {
        v.iter().copied().max().unwrap_or(0)
    }

    /// The 99th percentile of the 1 s windows (nearest rank).
    pub(super) fn p99(v: &[usize]) -> usize {
        let mut s = v.to_vec();
        s.sort_unstable();
        let rank = (s.len() * 99).div_ceil(100);
        s.get(rank.saturating_sub(1)).copied().unwrap_or(0)
    }
}

fn per_second(events: &[(u64, usize)], t0: u64, secs: usize) -> Vec<usize> {
    let mut out = vec![0; secs];
    for &(ms, _) in events {
        if let Some(slot) = ms
            .checked_sub(t0)
            .and_then(|d| out.get_mut(usize::try_from(d / 1000).ok()?))
        {
            *slot += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn peak_and_p99_of_one_second_windows() {
        let mut v = vec![0; 99];
        v.push(7);
        assert_eq!(Tally::peak(&v), 7);
        assert_eq!(Tally::p99(&v), 0);
        v.push(5);
        assert_eq!(Tally::p99(&v), 5);
        assert_eq!(
            super::per_second(&[(1000, 0), (1999, 1), (2500, 0)], 1000, 3),
            [2, 1, 0]
        );
    }
}
