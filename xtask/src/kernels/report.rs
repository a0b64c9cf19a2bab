//! docs/KERNELS.md from the guests' results: per kernel, each feature of
//! `lifeline_common::features` as the tests reported it (`kernel-matrix:` lines, printed
//! only after a test asserted what that kernel must do), each test's outcome and time, and
//! what `lifeline check` printed there. A failed test or a feature no passing test reported
//! on some kernel fails the run (after the document is written, so it shows which).

use std::{fmt::Write as _, fs, path::Path};

use anyhow::Result;
use lifeline_common::features::{ALL, Feature};

use super::{TESTS, vm::Run};
use crate::lab::json_string;

/// One guest's results, read back from its directory.
struct Guest<'a> {
    run: &'a Run,
    /// (test, exit code, seconds, first error line).
    tests: Vec<(String, i32, u64, String)>,
    /// (feature id, result, what the user saw).
    reports: Vec<(String, String, String)>,
    check: String,
}

fn read(run: &Run) -> Guest<'_> {
    let mut g = Guest {
        run,
        tests: Vec::new(),
        reports: Vec::new(),
        check: String::new(),
    };
    g.check = fs::read_to_string(run.out.join("check.txt")).unwrap_or_default();
    for (bin, test) in TESTS {
        let name = format!("{bin}::{test}");
        let file = |ext: &str| fs::read_to_string(run.out.join(format!("tests/{name}.{ext}")));
        let rc = file("rc").unwrap_or_default();
        let mut words = rc.split_whitespace().map(|w| w.parse::<i64>().ok());
        let (code, secs) = (
            words.next().flatten().unwrap_or(-1),
            words.next().flatten().unwrap_or(0),
        );
        let log = file("log").unwrap_or_default();
        // libtest prints "test NAME ... " with no newline before the test's own output.
        let marker = "kernel-matrix: ";
        for line in log
            .lines()
            .filter_map(|l| Some(&l[l.find(marker)? + marker.len()..]))
        {
            if let (Some(f), Some(r), Some(s)) = (
                json_string(line, "feature"),
                json_string(line, "result"),
                json_string(line, "shows"),
            ) {
                g.reports.push((f, r, s));
            }
        }
        let error = log
            .lines()
            .find(|l| l.starts_with("Error:") || l.contains("panicked at"))
            .unwrap_or("")
            .to_owned();
        g.tests.push((
            name,
            i32::try_from(code).unwrap_or(-1),
            u64::try_from(secs).unwrap_or(0),
            error,
        ));
    }
    g
}

/// "pass", "degraded", or "NOT SHOWN", and every distinct thing the user saw.
fn feature_cell(g: &Guest<'_>, f: &Feature) -> (String, Vec<String>) {
    let mine: Vec<_> = g.reports.iter().filter(|r| r.0 == f.id).collect();
    let mut shows: Vec<String> = mine.iter().map(|r| r.2.clone()).collect();
    shows.dedup();
    let result = match mine.first() {
        None => "NOT SHOWN".to_owned(),
        Some(r) if mine.iter().all(|x| x.1 == r.1) => r.1.clone(),
        Some(_) => "INCONSISTENT".to_owned(),
    };
    (result, shows)
}

/// Writes the document to `doc`; the result says whether the matrix passed.
///
/// # Errors
/// When the document cannot be written; `Ok(Err(..))` when the matrix failed.
pub fn write(ws: &Path, runs: &[Run], doc: &Path) -> Result<Result<()>> {
    let guests: Vec<Guest<'_>> = runs.iter().map(read).collect();
    let commit = xtask::process::capture(
        "git rev-parse",
        std::process::Command::new("git")
            .current_dir(ws)
            .args(["rev-parse", "--short", "HEAD"]),
    )
    .unwrap_or_default();
    let mut md = String::from("# lifeline on the kernels nodes run\n\n");
    let _ = writeln!(
        md,
        "Written by `cargo xtask test --kernel all` (commit {commit}); do not edit. Each kernel is Debian's \
        cloud kernel, booted under qemu (TCG, 2 vCPUs) with the host's userland shared read-only; in each guest \
        `lifeline check` and the lab tests below ran against the release agent. A feature (`common/src/features.rs`: \
        the first Linux release with it, and what lifeline does without it) is **pass** where the tests saw it work, \
        **degraded** where they saw exactly the documented degradation; a test asserts one or the other, never skips.\n"
    );
    md.push_str("| feature | since |");
    for g in &guests {
        let _ = write!(md, " {} ({}) |", g.run.release, g.run.series);
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(guests.len()));
    let mut failures = Vec::new();
    for f in &ALL {
        let _ = write!(
            md,
            "\n| `{}`: {} | {}.{} |",
            f.id, f.gives, f.since.0, f.since.1
        );
        for g in &guests {
            let (result, _) = feature_cell(g, f);
            if result != "pass" && result != "degraded" {
                failures.push(format!("{}: {} {result}", g.run.release, f.id));
            }
            let _ = write!(
                md,
                " {} |",
                if result == "degraded" {
                    "**degraded**"
                } else {
                    &result
                }
            );
        }
    }
    md.push_str("\n\n## What each kernel showed\n");
    for g in &guests {
        let _ = writeln!(
            md,
            "\n### {} ({}, Debian package {}; fleets: {})\n",
            g.run.release,
            g.run.series,
            g.run.version,
            series_seen_on(g.run.series)
        );
        for f in &ALL {
            let (result, shows) = feature_cell(g, f);
            let note = if result == "degraded" {
                format!(
                    " (needs {}.{}; without it: {})",
                    f.since.0, f.since.1, f.without
                )
            } else {
                String::new()
            };
            let _ = writeln!(md, "- `{}` **{result}**{note}: {}", f.id, shows.join("; "));
        }
        let secs = fs::read_to_string(g.run.out.join("runner-secs")).unwrap_or_default();
        let _ = writeln!(
            md,
            "\nTests ({} s in the guest, {:.0} s from boot to power-off):\n",
            secs.trim(),
            g.run.wall.as_secs_f64()
        );
        md.push_str("| test | result | seconds |\n|---|---|---|\n");
        for (name, code, secs, error) in &g.tests {
            let result = if *code == 0 {
                "pass".to_owned()
            } else {
                format!("**FAIL** (exit {code}) {}", error.replace('|', "/"))
            };
            if *code != 0 {
                failures.push(format!("{}: {name} failed", g.run.release));
            }
            let _ = writeln!(md, "| `{name}` | {result} | {secs} |");
        }
        let _ = writeln!(md, "\n`lifeline check` there:\n\n```\n{}```", g.check);
    }
    fs::write(doc, md)?;
    if failures.is_empty() {
        Ok(Ok(()))
    } else {
        Ok(Err(anyhow::anyhow!(
            "the kernel matrix failed: {}",
            failures.join("; ")
        )))
    }
}

fn series_seen_on(name: &str) -> &'static str {
    super::SERIES
        .iter()
        .find(|s| s.name == name)
        .map_or("", |s| s.seen_on)
}
