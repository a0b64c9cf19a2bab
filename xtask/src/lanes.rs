//! The lab test files in two lanes. Most files run one after another (each with four test
//! threads); the few that last minutes while mostly waiting (a 5-minute watch of quiet
//! connections, a 3-minute loss soak) run beside them in a second `cargo test`, so CI's
//! time is the longer lane, not the sum. Cargo holds its build lock only while compiling,
//! and everything is compiled once before either lane starts.

use std::{
    fs,
    path::Path,
    process::{Command, Stdio},
};

use anyhow::{Context as _, Result, bail};
use xtask::process::{Output, run};

use crate::cargo_run::cargo_cmd;

/// Files whose tests last minutes and mostly sleep between checks: the second lane.
const QUIET_LANE: [&str; 3] = ["endpoint_identity", "loss_soak", "proxy_loss_soak"];

/// Every lab test target: `tests/tests/NAME.rs` and `tests/tests/NAME/main.rs`, as cargo
/// discovers them.
fn targets(ws: &Path) -> Result<Vec<String>> {
    let dir = ws.join("tests/tests");
    let mut out = Vec::new();
    for e in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = e?.path();
        let name = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned);
        let is_test = if path.is_dir() {
            path.join("main.rs").is_file()
        } else {
            path.extension().is_some_and(|x| x == "rs")
        };
        if let (true, Some(name)) = (is_test, name) {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

fn test_args<'a>(lab: &'a str, names: &'a [String]) -> Vec<&'a str> {
    // Every file runs even after one fails, so a run names every failure, not the first.
    let mut args = vec!["test", "-p", lab, "--no-fail-fast"];
    for n in names {
        args.extend(["--test", n.as_str()]);
    }
    args.extend(["--", "--test-threads=4"]);
    args
}

/// Builds every lab test once, then runs the two lanes; both must pass. The quiet lane's
/// output goes to `log` and is printed when it ends, so the two do not interleave.
pub fn run_lab_tests(ws: &Path, lab: &str, env: &[(&str, &Path)], log: &Path) -> Result<()> {
    let with_env = |mut cmd: Command| {
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    };
    run(
        "building the lab tests",
        &mut cargo_cmd(ws, &["test", "-p", lab, "--tests", "--no-run"]),
        Output::Inherit,
    )?;
    let all = targets(ws)?;
    let (quiet, main): (Vec<String>, Vec<String>) = all
        .into_iter()
        .partition(|t| QUIET_LANE.contains(&t.as_str()));
    if quiet.len() != QUIET_LANE.len() {
        bail!("lab tests: the quiet lane names a test file that does not exist: {QUIET_LANE:?}");
    }
    let out = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut second = with_env(cargo_cmd(ws, &test_args(lab, &quiet)))
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .context("starting the quiet lane of the lab tests")?;
    let first = run(
        "lab tests",
        &mut with_env(cargo_cmd(ws, &test_args(lab, &main))),
        Output::Inherit,
    );
    let status = second.wait().context("waiting for the quiet lane")?;
    println!("::: lab tests, quiet lane ({}):", quiet.join(", "));
    print!("{}", fs::read_to_string(log).unwrap_or_default());
    first?;
    if !status.success() {
        bail!(
            "lab tests (quiet lane: {}) failed ({status}); output above and in {}",
            quiet.join(", "),
            log.display()
        );
    }
    Ok(())
}
