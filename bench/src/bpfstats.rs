//! The kernel side's cost, exactly: with `kernel.bpf_stats_enabled=1` the kernel counts each
//! program's runs and the nanoseconds they took (`run_cnt`, `run_time_ns`, reported by
//! `bpftool prog show`), with no throughput noise. Only the programs of the agent under test
//! count: other agents may be attached to the same cgroup root meanwhile (other worktrees'
//! labs), so the ids are those the agent's process holds open.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_common::hooks::Hook;
use serde_json::Value;

/// `kernel.bpf_stats_enabled` set to 1 while the guard lives, then put back as it was.
pub(crate) fn stats_on() -> Result<crate::sysctl::Sysctl> {
    crate::sysctl::Sysctl::set("/proc/sys/kernel/bpf_stats_enabled", "1")
}

/// `kernel.bpf_stats_enabled` set to 0 while the guard lives, then put back as it was: the
/// test runs (`crate::testrun`) time each run while it is on. Dropping `stats_on`'s guard is
/// not enough: it puts back what it found, and a host left at 1 (a hand check, a bench
/// killed before its guard dropped) measured the test runs with the clock reads they exist
/// to leave out (95 ns for lifeline's program at stop 47; 25 ns with the sysctl at 0).
pub(crate) fn stats_off() -> Result<crate::sysctl::Sysctl> {
    crate::sysctl::Sysctl::set("/proc/sys/kernel/bpf_stats_enabled", "0")
}

/// One hook's runs over a measured interval.
#[derive(Clone, Debug, Default)]
pub(crate) struct Runs {
    pub count: u64,
    pub ns: u64,
}

impl Runs {
    #[expect(clippy::cast_precision_loss, reason = "nanoseconds for display")]
    pub(crate) fn ns_per_run(&self) -> Option<f64> {
        (self.count > 0).then(|| self.ns as f64 / self.count as f64)
    }
}

/// The agent's programs on the cgroup root, by attach type (`cgroup_sock_ops`,
/// `cgroup_inet4_connect`, ...), and its unanswered-probe hook (`UNANSWERED`: the fentry
/// program and its tracepoint fallback, whichever is attached), with their ids.
pub(crate) fn hooks(pid: u32) -> Result<BTreeMap<String, Vec<u32>>> {
    let root = lifeline_tests::cgroup2_mount()?;
    let out = lifeline_tests::infra::cmd::output(
        std::process::Command::new("bpftool")
            .args(["cgroup", "show", "-j"])
            .arg(&root),
    )?;
    let attached: Value = serde_json::from_slice(&out.stdout).context("bpftool cgroup show")?;
    let ours = prog_ids(pid);
    let mut out: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for p in attached.as_array().into_iter().flatten() {
        let (Some(id), Some(kind)) = (
            p["id"].as_u64().and_then(|i| u32::try_from(i).ok()),
            p["attach_type"].as_str(),
        ) else {
            continue;
        };
        if ours.contains(&id) {
            out.entry(kind.to_owned()).or_default().push(id);
        }
    }
    // Programs not on the cgroup root, known by name: the unanswered-probe hook (fentry or
    // its tracepoint fallback) and the tc egress program (on the devices watched peers are
    // routed through).
    let by_name = [
        (UNANSWERED, Hook::Unanswered),
        (UNANSWERED, Hook::UnansweredTimer),
        (TC, Hook::ProbeByte),
    ];
    for id in ours {
        // The kernel keeps the first 15 bytes of a program's name (BPF_OBJ_NAME_LEN - 1).
        let kept = name(id)?;
        if let Some((key, _)) = by_name
            .iter()
            .find(|(_, h)| !kept.is_empty() && h.program().starts_with(&kept))
        {
            out.entry((*key).to_owned()).or_default().push(id);
        }
    }
    Ok(out)
}

/// The key of the unanswered-probe hook in `hooks`.
pub(crate) const UNANSWERED: &str = "unanswered";
/// The key of the tc egress program (fast probes) in `hooks`.
pub(crate) const TC: &str = "tc_egress";

fn name(id: u32) -> Result<String> {
    Ok(show(id)?["name"].as_str().unwrap_or_default().to_owned())
}

fn show(id: u32) -> Result<Value> {
    let out = lifeline_tests::infra::cmd::output(std::process::Command::new("bpftool").args([
        "prog",
        "show",
        "id",
        &id.to_string(),
        "-j",
    ]))?;
    serde_json::from_slice(&out.stdout).context("bpftool prog show")
}

/// The key of the neighbour's tc program (`costbpf::neighbour`) in `hooks`.
pub(crate) const NEIGHBOUR: &str = "neighbour_tc";

/// Ids of the programs `pid` holds open (`prog_id:` in each fd's fdinfo).
pub(crate) fn prog_ids(pid: u32) -> Vec<u32> {
    prog_fdinfos(pid).into_iter().map(|(id, _)| id).collect()
}

/// Each program `pid` holds open: its id and the fdinfo file of that descriptor.
pub(crate) fn prog_fdinfos(pid: u32) -> Vec<(u32, std::path::PathBuf)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let info = std::fs::read_to_string(e.path()).ok()?;
            let id = info
                .lines()
                .find_map(|l| l.strip_prefix("prog_id:"))
                .and_then(|v| v.trim().parse().ok())?;
            Some((id, e.path()))
        })
        .collect()
}

/// Runs so far of programs `ids`, summed.
fn read(ids: &[u32]) -> Result<Runs> {
    let mut r = Runs::default();
    for id in ids {
        let v = show(*id)?;
        r.count += v["run_cnt"].as_u64().unwrap_or(0);
        r.ns += v["run_time_ns"].as_u64().unwrap_or(0);
    }
    Ok(r)
}

/// Each hook's runs while `work` runs (stats must be on).
pub(crate) fn during<T>(
    hooks: &BTreeMap<String, Vec<u32>>,
    work: impl FnOnce() -> Result<T>,
) -> Result<(BTreeMap<String, Runs>, T)> {
    let before: BTreeMap<&String, Runs> = hooks
        .iter()
        .map(|(k, ids)| Ok((k, read(ids)?)))
        .collect::<Result<_>>()?;
    let out = work()?;
    let mut runs = BTreeMap::new();
    for (k, ids) in hooks {
        let (a, b) = (read(ids)?, &before[k]);
        runs.insert(
            k.clone(),
            Runs {
                count: a.count.saturating_sub(b.count),
                ns: a.ns.saturating_sub(b.ns),
            },
        );
    }
    Ok((runs, out))
}

/// A pause long enough for a callback still in flight to be counted.
pub(crate) fn settle() {
    std::thread::sleep(Duration::from_millis(200));
}
