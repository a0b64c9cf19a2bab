//! One guest's results, read back from the directory its runner wrote (xtask/guest/run.sh):
//! per test the exit code, the time and the first error; the `kernel-matrix:` lines the tests
//! printed (`tests/src/infra/kernel.rs`), each only after the test asserted what that kernel must
//! do; and what `lifeline check` printed.

use std::fs;

use lifeline_common::features::Feature;

use super::{TESTS, vm::Run};
use crate::cargo_run::json_string;

/// One guest's results, read back from its directory.
pub(super) struct Guest<'a> {
    pub run: &'a Run,
    /// (test, exit code, seconds, first error line).
    pub tests: Vec<(String, i32, u64, String)>,
    /// (feature id, result, what the user saw).
    pub reports: Vec<(String, String, String)>,
    pub check: String,
}

pub(super) fn read(run: &Run) -> Guest<'_> {
    let mut g = Guest {
        run,
        tests: Vec::new(),
        reports: Vec::new(),
        check: String::new(),
    };
    g.check = fs::read_to_string(run.out.join("check.txt")).unwrap_or_default();
    for name in TESTS {
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
        // `Error: ...` (a test returning Err), or the line after `panicked at FILE:LINE:`.
        let mut lines = log.lines();
        let error = lines
            .find(|l| l.starts_with("Error:") || l.contains("panicked at"))
            .map(|l| match l.strip_prefix("Error:") {
                Some(e) => e.trim().to_owned(),
                None => lines.next().unwrap_or(l).to_owned(),
            })
            .unwrap_or_default();
        g.tests.push((
            name.to_owned(),
            i32::try_from(code).unwrap_or(-1),
            u64::try_from(secs).unwrap_or(0),
            error,
        ));
    }
    g
}

/// "pass", "degraded", or "NOT SHOWN", and every distinct thing the user saw.
pub(super) fn feature_cell(g: &Guest<'_>, f: &Feature) -> (String, Vec<String>) {
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
