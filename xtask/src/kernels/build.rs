//! What the guests run, built on the host: the agent in release mode (under TCG a debug
//! build needs seconds to start: aya parses the kernel's BTF in it), the lab's fixtures,
//! and the test executables of `super::TESTS`, found in cargo's JSON messages.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use xtask::process::capture;

use super::TESTS;
use crate::lab::{cargo, cargo_cmd, json_string, target_dir};

pub struct Built {
    pub lifeline: PathBuf,
    /// (name for the results, executable, test name), in `TESTS` order.
    pub tests: Vec<(String, PathBuf, &'static str)>,
}

/// # Errors
/// When a build fails or cargo does not name a test executable.
pub fn build(ws: &Path) -> Result<Built> {
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
    let mut args = vec!["test", "-p", "lifeline-tests", "--no-run"];
    args.push("--message-format=json-render-diagnostics");
    for (bin, _) in TESTS {
        if !args.contains(&bin) {
            args.extend(["--test", bin]);
        }
    }
    // Progress and errors on our stderr; the JSON messages come back on stdout.
    let mut cmd = cargo_cmd(ws, &args);
    cmd.stderr(std::process::Stdio::inherit());
    let json = capture("building the lab tests", &mut cmd)?;
    let exes = executables(&json);
    let mut tests = Vec::new();
    for (bin, test) in TESTS {
        let exe = exes
            .iter()
            .find(|(name, _)| name == bin)
            .map(|(_, exe)| exe.clone())
            .ok_or_else(|| {
                anyhow!("building the lab tests: cargo named no executable for `{bin}`")
            })?;
        tests.push((format!("{bin}::{test}"), exe, test));
    }
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
