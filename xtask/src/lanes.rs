//! The lab's one test binary (`tests/tests/lab/`, cargo's test target `lab`) in two lanes
//! run at once, both processes of that binary: the tests that last minutes while mostly
//! waiting (a 5-minute watch of quiet connections, the loss soaks) all start together in the
//! quiet lane, and the rest run beside them a module at a time (one process per module,
//! `MAIN_THREADS` of its tests at once: a module's tests share timing bounds that were set
//! with only their siblings beside them), so CI's time is the longer lane, not the sum.
//! Each lane gets an exact list of names from the binary's own `--list`: every test runs in
//! exactly one lane, and a quiet-lane entry that names no test fails the run. Cargo holds
//! its build lock only while compiling, and the binary is built once before either lane
//! starts.

use std::{
    collections::BTreeMap,
    fs,
    path::Path,
    process::{Command, Stdio},
};

use anyhow::{Context as _, Result, bail};
use xtask::process::{Output, capture, run};

use crate::cargo_run::cargo_cmd;

/// The lab's test target: `tests/tests/lab/main.rs`.
pub(crate) const LAB_TARGET: &str = "lab";

/// Tests that last minutes and mostly sleep between checks: the quiet lane, all at once. A
/// module (`name::`, all its tests) or one test's full name. `hostile_servers` lasts
/// minutes too but stays in the main lane: it times a kill under a crowd of 3,000
/// connections, and the CPU it needs is what a quiet lane full of agents would share.
const QUIET_LANE: [&str; 5] = [
    "endpoint_identity::",
    "loss_soak::",
    "proxy_loss_soak::",
    "idle::healthy_idle_connection_is_left_alone_for_three_minutes",
    "endpoint_long::",
];

/// A module's tests at once in the main lane (they wait on the network most of the time; 2
/// cores).
const MAIN_THREADS: usize = 4;

/// Whether the quiet-lane entry `entry` names the test `name`.
fn names(entry: &str, name: &str) -> bool {
    if entry.ends_with("::") {
        name.starts_with(entry)
    } else {
        name == entry
    }
}

/// (quiet, main): every test in one of the two; fails when a quiet-lane entry names no test.
fn partition(all: &[String]) -> Result<(Vec<String>, Vec<String>)> {
    let unknown: Vec<&str> = QUIET_LANE
        .iter()
        .copied()
        .filter(|e| !all.iter().any(|n| names(e, n)))
        .collect();
    if !unknown.is_empty() {
        bail!("lab tests: the quiet lane names no test of the lab binary: {unknown:?}");
    }
    Ok(all
        .iter()
        .cloned()
        .partition(|n| QUIET_LANE.iter().any(|e| names(e, n))))
}

/// Every test of the lab binary, from its `--list` (`NAME: test` lines).
fn list(ws: &Path, lab: &str) -> Result<Vec<String>> {
    let args = [
        "test", "-p", lab, "--test", LAB_TARGET, "--", "--list", "--format", "terse",
    ];
    let out = capture("listing the lab tests", &mut cargo_cmd(ws, &args))?;
    Ok(out
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect())
}

/// The main lane's tests by module (`module::` prefix), modules in name order.
fn by_module(names: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for n in names {
        let module = n.split("::").next().unwrap_or(n);
        out.entry(module.to_owned()).or_default().push(n.clone());
    }
    out
}

fn test_args(lab: &str, names: &[String], threads: usize) -> Vec<String> {
    // Every test runs even after one fails, so a run names every failure, not the first.
    let mut args: Vec<String> = ["test", "-p", lab, "--test", LAB_TARGET, "--no-fail-fast"]
        .map(str::to_owned)
        .into();
    args.extend(["--".into(), "--exact".into()]);
    args.push(format!("--test-threads={threads}"));
    args.extend(names.iter().cloned());
    args
}

/// Builds the lab binary once, then runs the two lanes; both must pass. The quiet lane's
/// output goes to `log` and is printed when it ends, so the two do not interleave.
pub(crate) fn run_lab_tests(ws: &Path, lab: &str, env: &[(&str, &Path)], log: &Path) -> Result<()> {
    let with_env = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = cargo_cmd(ws, &args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    };
    crate::lab_tree::check(ws)?;
    let build = ["test", "-p", lab, "--test", LAB_TARGET, "--no-run"];
    run(
        "building the lab tests",
        &mut cargo_cmd(ws, &build),
        Output::Inherit,
    )?;
    let (quiet, main) = partition(&list(ws, lab)?)?;
    println!(
        "::: lab tests: {} in the main lane ({MAIN_THREADS} at a time), {} in the quiet lane (all at once)",
        main.len(),
        quiet.len()
    );
    let out = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut second: Command = with_env(&test_args(lab, &quiet, quiet.len()));
    let mut second = second
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .context("starting the quiet lane of the lab tests")?;
    // Every module runs even after one fails, so a run names every failure, not the first.
    let mut failed = Vec::new();
    for (module, tests) in by_module(&main) {
        let ran = run(
            &format!("lab tests: {module}"),
            &mut with_env(&test_args(lab, &tests, MAIN_THREADS)),
            Output::Inherit,
        );
        if ran.is_err() {
            failed.push(module);
        }
    }
    let status = second.wait().context("waiting for the quiet lane")?;
    println!("::: lab tests, quiet lane ({}):", QUIET_LANE.join(", "));
    print!("{}", fs::read_to_string(log).unwrap_or_default());
    if !failed.is_empty() {
        bail!("lab tests failed in: {}", failed.join(", "));
    }
    if !status.success() {
        bail!(
            "lab tests (quiet lane: {}) failed ({status}); output above and in {}",
            QUIET_LANE.join(", "),
            log.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{by_module, partition};

    #[test]
    fn the_main_lane_runs_a_module_at_a_time() {
        let names = ["idle::b", "blip::a", "idle::a", "container::steps::x"].map(str::to_owned);
        let got = by_module(&names);
        let modules: Vec<&str> = got.keys().map(String::as_str).collect();
        assert_eq!(modules, ["blip", "container", "idle"]);
        assert_eq!(got["idle"], ["idle::b", "idle::a"]);
    }

    #[test]
    fn every_test_in_one_lane_and_every_quiet_entry_names_one() {
        let all: Vec<String> = [
            "blackhole::blackhole_is_killed",
            "endpoint_identity::a",
            "loss_soak::soak",
            "proxy_loss_soak::soak",
            "idle::healthy_idle_connection_is_left_alone_for_three_minutes",
            "idle::idle_long_poll_blackholed_is_killed_as_silent",
            "endpoint_long::control::x",
            "hostile_servers::h",
        ]
        .map(str::to_owned)
        .into();
        let (quiet, main) = partition(&all).unwrap();
        assert_eq!(
            main,
            [
                "blackhole::blackhole_is_killed",
                "idle::idle_long_poll_blackholed_is_killed_as_silent",
                "hostile_servers::h"
            ]
        );
        assert_eq!(quiet.len() + main.len(), all.len());
        let err = partition(&all[..2]).unwrap_err().to_string();
        assert!(err.contains("loss_soak::"), "{err}");
    }
}
