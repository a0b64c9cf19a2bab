//! What the guests run, built on the host: the agent in release mode (under TCG a debug
//! build needs seconds to start: aya parses the kernel's BTF in it), the lab's fixtures,
//! and the lab's one test executable (`tests/tests/lab/`), found in cargo's JSON messages,
//! which runs the tests of `super::TESTS`; and the plan that tells each guest's runner what
//! to run.

use std::{
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Result, anyhow};
use xtask::process::capture;

use super::TESTS;
use crate::cargo_run::{cargo, cargo_cmd, json_string, target_dir};

pub(super) struct Built {
    pub lifeline: PathBuf,
    /// (executable, test name), in `TESTS` order: the lab's one binary each time.
    pub tests: Vec<(PathBuf, &'static str)>,
}

/// # Errors
/// When a build fails or cargo does not name a test executable.
pub(super) fn build(ws: &Path) -> Result<Built> {
    cargo(
        ws,
        "building the release agent",
        &["build", "--release", "-p", "lifeline"],
    )?;
    cargo(
        ws,
        "building the lab's fixtures",
        &["build", "-p", "lifeline-tests", "--bins"],
    )?;
    // The Go client (`restore`'s test dials with Go's own net.Dialer).
    crate::gofixture::build(ws)?;
    let args = [
        "test",
        "-p",
        "lifeline-tests",
        "--test",
        crate::lanes::LAB_TARGET,
        "--no-run",
        "--message-format=json-render-diagnostics",
    ];
    // Progress and errors on our stderr; the JSON messages come back on stdout.
    let mut cmd = cargo_cmd(ws, &args);
    cmd.stderr(std::process::Stdio::inherit());
    let json = capture("building the lab tests", &mut cmd)?;
    let exe = executables(&json)
        .into_iter()
        .find(|(name, _)| name == crate::lanes::LAB_TARGET)
        .map(|(_, exe)| exe)
        .ok_or_else(|| {
            anyhow!(
                "building the lab tests: cargo named no executable for `{}`",
                crate::lanes::LAB_TARGET
            )
        })?;
    let tests = TESTS.iter().map(|&test| (exe.clone(), test)).collect();
    Ok(Built {
        lifeline: target_dir(ws)?.join("release/lifeline"),
        tests,
    })
}

/// (target name, executable) of every test target in cargo's `--message-format=json`.
fn executables(json: &str) -> Vec<(String, PathBuf)> {
    json.lines()
        .filter(|l| l.contains(r#""kind":["test"]"#))
        .filter_map(|l| {
            let exe = json_string(l, "executable")?;
            // The first "name" of a compiler-artifact message is its target's.
            Some((json_string(l, "name")?, PathBuf::from(exe)))
        })
        .collect()
}

/// Modules the lab needs that are not built into Debian's cloud kernels.
const MODULES: &str = "inet_diag tcp_diag udp_diag raw_diag veth bridge nf_tables nft_counter \
                       nft_ct nft_numgen nft_reject_inet nf_conntrack_bridge sch_ingress cls_bpf\n";
const RUNNER: &str = include_str!("../../guest/run.sh");
/// Tests at once in a guest (they mostly wait; 2 vCPUs).
const PARALLEL: u32 = 2;
const TEST_TIMEOUT_S: u32 = 300;

/// The plan a guest's runner (xtask/guest/run.sh, PID 1 in the guest) reads from the
/// results share: the agent, the tests and their executables, how many at once and for how
/// long, the kernel modules the lab needs, and the runner itself.
///
/// # Errors
/// When a file cannot be written.
pub(super) fn write_plan(built: &Built, out: &Path) -> Result<()> {
    let plan = format!(
        "LIFELINE_BIN={}\nPARALLEL={PARALLEL}\nTEST_TIMEOUT={TEST_TIMEOUT_S}\nLAB_NO_FALSE_POSITIVE_SECS=20\n",
        built.lifeline.display()
    );
    fs::write(out.join("plan.env"), plan)?;
    let mut list = String::new();
    for (exe, test) in &built.tests {
        // The test's name is also its results' file name (`tests/NAME.rc`, `.log`).
        let _ = writeln!(list, "{test} {} {test}", exe.display());
    }
    fs::write(out.join("tests.list"), list)?;
    fs::write(out.join("modules"), MODULES)?;
    fs::write(out.join("run.sh"), RUNNER)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::executables;

    #[test]
    fn finds_test_executables() {
        let json = concat!(
            r#"{"reason":"compiler-artifact","target":{"kind":["test"],"name":"idle"},"executable":"/t/deps/idle-1"}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"x"},"executable":null}"#,
        );
        assert_eq!(
            executables(json),
            vec![("idle".to_owned(), "/t/deps/idle-1".into())]
        );
    }
}
