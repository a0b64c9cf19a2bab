//! docs/KERNELS.md from the guests' results (results.rs): per kernel, each feature of
//! `lifeline_common::features` as the tests reported it, each test's outcome and time, and
//! what `lifeline check` printed there; the arm64 kernels' checks after them
//! (`report_arm64.rs`). A failed test or a feature no passing test reported
//! on some kernel fails the run (after the document is written, so it shows which).

use std::{fmt::Write as _, fs, path::Path};

use anyhow::Result;
use lifeline_common::features::ALL;

use super::{
    report_arm64,
    results::{Guest, feature_cell, read},
    vm::Run,
};

/// Writes the document to `doc`; the result says whether the matrix passed.
///
/// # Errors
/// When the document cannot be written; `Ok(Err(..))` when the matrix failed.
pub(super) fn write(ws: &Path, runs: &[Run], doc: &Path) -> Result<Result<()>> {
    let (arm, amd): (Vec<&Run>, Vec<&Run>) = runs.iter().partition(|r| {
        super::SERIES
            .iter()
            .any(|s| s.name == r.series && s.arch.name == "arm64")
    });
    let guests: Vec<Guest<'_>> = amd.into_iter().map(read).collect();
    let commit = report_arm64::commit(ws);
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
        tests_table(&mut md, g, &mut failures);
        let _ = writeln!(md, "\n`lifeline check` there:\n\n```\n{}```", g.check);
    }
    report_arm64::write(&commit, &arm, &mut md, &mut failures);
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

/// A guest's tests, a row each, after how its first boot died when it was booted twice.
fn tests_table(md: &mut String, g: &Guest<'_>, failures: &mut Vec<String>) {
    if let Some(died) = &g.run.first_boot {
        let _ = writeln!(
            md,
            "The first boot of this kernel died before its runner finished ({}); these are the second boot's.\n",
            died.replace('|', "/")
        );
    }
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
}
