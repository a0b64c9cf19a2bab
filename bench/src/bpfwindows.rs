//! Each hook's runs in short windows while a flow runs, and the median of the windows' ns per
//! run: a check of whether a few runs carry time that was not theirs.
//!
//! `bpf_stats` times each run with two clock reads around it (`__bpf_prog_run()` with
//! `bpf_stats_enabled_key`, <https://github.com/torvalds/linux/blob/v6.18/include/linux/filter.h>).
//! On a VM, a vCPU the hypervisor takes away in the middle of a run (steal time, the 8th
//! value of `/proc/stat`'s `cpu` line) or an interrupt taken there adds all of that time to
//! that one run: one 3 ms steal among 20,000 runs adds 150 ns to the mean. The windows where
//! that happened stand out from their median.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;

use crate::bpfstats::Runs;

const WINDOW: Duration = Duration::from_millis(200);
/// A bound on the sampler, whatever the flow does: 200 s of windows.
const MAX_WINDOWS: usize = 1000;
/// A window with fewer runs says too little about one run.
pub(crate) const MIN_RUNS: u64 = 100;

/// Where each program's counters can be read without a process of its own: the `fdinfo` of
/// a descriptor a process holds on it (`run_time_ns`, `run_cnt`: `bpf_prog_show_fdinfo()` in
/// <https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/syscall.c>).
pub(crate) struct Fdinfo(BTreeMap<u32, PathBuf>);

impl Fdinfo {
    /// The program descriptors of `pids`, by program id.
    pub(crate) fn of(pids: &[u32]) -> Self {
        let mut m = BTreeMap::new();
        for (id, path) in pids.iter().flat_map(|p| crate::bpfstats::prog_fdinfos(*p)) {
            m.entry(id).or_insert(path);
        }
        Self(m)
    }

    /// Runs so far of programs `ids`, summed (a program without a descriptor counts 0).
    fn read(&self, ids: &[u32]) -> Runs {
        let mut r = Runs::default();
        for path in ids.iter().filter_map(|id| self.0.get(id)) {
            if let Ok(info) = std::fs::read_to_string(path) {
                r.count += field(&info, "run_cnt:").unwrap_or(0);
                r.ns += field(&info, "run_time_ns:").unwrap_or(0);
            }
        }
        r
    }
}

fn field(info: &str, key: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
}

/// Each hook's runs per `WINDOW` while `work` runs.
pub(crate) fn during<T>(
    hooks: &BTreeMap<String, Vec<u32>>,
    files: &Fdinfo,
    work: impl FnOnce() -> Result<T>,
) -> Result<(BTreeMap<String, Vec<Runs>>, T)> {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut last: BTreeMap<&String, Runs> =
                hooks.iter().map(|(k, ids)| (k, files.read(ids))).collect();
            let mut out: BTreeMap<String, Vec<Runs>> = BTreeMap::new();
            for _ in 0..MAX_WINDOWS {
                std::thread::sleep(WINDOW);
                for (k, ids) in hooks {
                    let now = files.read(ids);
                    let prev = last.insert(k, now.clone()).unwrap_or_default();
                    out.entry(k.clone()).or_default().push(Runs {
                        count: now.count.saturating_sub(prev.count),
                        ns: now.ns.saturating_sub(prev.ns),
                    });
                }
                if done.load(Ordering::Relaxed) {
                    break;
                }
            }
            out
        });
        let r = work();
        done.store(true, Ordering::Relaxed);
        let windows = sampler.join().unwrap_or_default();
        r.map(|t| (windows, t))
    })
}

/// The median of the windows' ns per run, over windows with at least `MIN_RUNS` runs, and
/// how many windows that was.
pub(crate) fn median_ns(windows: &[Runs]) -> Option<(f64, usize)> {
    let mut per: Vec<f64> = windows
        .iter()
        .filter(|w| w.count >= MIN_RUNS)
        .filter_map(Runs::ns_per_run)
        .collect();
    if per.is_empty() {
        return None;
    }
    per.sort_by(f64::total_cmp);
    Some((per[per.len() / 2], per.len()))
}

/// The host's steal time so far, all CPUs, in ms.
pub(crate) fn steal_ms() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| crate::scale_why::stat_ms(&t, 8))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(count: u64, ns: u64) -> Runs {
        Runs { count, ns }
    }

    #[test]
    fn one_stolen_window_moves_the_mean_not_the_median() {
        let mut ws = vec![w(1000, 40_000); 9];
        // 3 ms stolen in one run of the 10th window.
        ws.push(w(1000, 40_000 + 3_000_000));
        let (med, n) = median_ns(&ws).unwrap();
        assert_eq!((med, n), (40.0, 10));
        let total: Runs = ws.iter().fold(Runs::default(), |a, b| Runs {
            count: a.count + b.count,
            ns: a.ns + b.ns,
        });
        assert!(total.ns_per_run().unwrap() > 300.0);
    }

    #[test]
    fn windows_with_too_few_runs_say_nothing() {
        assert_eq!(median_ns(&[w(MIN_RUNS - 1, 5000), w(0, 0)]), None);
        assert_eq!(median_ns(&[w(MIN_RUNS, 5000)]), Some((50.0, 1)));
    }

    #[test]
    fn fdinfo_fields_are_read_by_name() {
        let info = "pos:\t0\nflags:\t02000002\nprog_type:\t3\nprog_id:\t42\nrun_time_ns:\t1234\nrun_cnt:\t7\n";
        assert_eq!(field(info, "prog_id:"), Some(42));
        assert_eq!(field(info, "run_cnt:"), Some(7));
        assert_eq!(field(info, "run_time_ns:"), Some(1234));
        assert_eq!(field(info, "missing:"), None);
    }
}
