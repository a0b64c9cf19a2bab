//! docs/KERNELS.md's arm64 columns: per arm64 kernel (arm64.rs), what `lifeline check` printed
//! in the guest and its exit code. `check` exits non-zero when a row fails (a program that
//! does not load or attach, a feature the kernel should have that does not work), so a
//! non-zero exit fails the run; its `unanswered probes` row names the hook it attached
//! (fentry, or the `timer_expire_entry` tracepoint where fentry is refused).

use std::{fmt::Write as _, fs, path::Path};

use anyhow::Result;

use super::vm::Run;

/// The section's heading: where a run of the arm64 kernels alone replaces the document's tail.
pub(super) const HEADING: &str = "\n## arm64\n";

/// `cargo xtask test --kernel arm64-6.1,arm64-6.12`: replaces the arm64 section of `doc`
/// (its tail), leaving the amd64 part as the last `--kernel all` wrote it.
///
/// # Errors
/// When the document cannot be read or written; `Ok(Err(..))` when a check failed.
pub(super) fn replace(ws: &Path, runs: &[Run], doc: &Path) -> Result<Result<()>> {
    let old = fs::read_to_string(doc).unwrap_or_default();
    let mut md = old[..old.find(HEADING).unwrap_or(old.len())].to_owned();
    let mut failures = Vec::new();
    let runs: Vec<&Run> = runs.iter().collect();
    write(&commit(ws), &runs, &mut md, &mut failures);
    fs::write(doc, md)?;
    Ok(if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "the arm64 kernels failed: {}",
            failures.join("; ")
        ))
    })
}

/// Appends the section to `md`; a kernel whose check failed goes into `failures`.
pub(super) fn write(commit: &str, runs: &[&Run], md: &mut String, failures: &mut Vec<String>) {
    if runs.is_empty() {
        return;
    }
    md.push_str(HEADING);
    let _ = write!(
        md,
        "\nWritten by `cargo xtask test --kernel all` or `--kernel arm64-6.1,arm64-6.12` (commit {commit}). Debian's arm64 cloud kernels under qemu-system-aarch64 (TCG, `-machine virt -cpu max`, \
        2 vCPUs), with a userland of their own (the host's is x86_64): arm64 static busybox and the static \
        aarch64 agent in the initramfs. There `lifeline check` loads, attaches and exercises every program of \
        the probe (sock_ops, the cgroup tracepoints, the unanswered-probe hook, the keepalive setters, \
        SOCK_DESTROY); the lab tests run on amd64 only (they drive x86_64 tools).\n\n",
    );
    md.push_str("| |");
    for r in runs {
        let _ = write!(md, " {} ({}) |", r.release, r.series);
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(runs.len()));
    md.push_str("\n| Debian package |");
    for r in runs {
        let _ = write!(md, " {} |", r.version);
    }
    md.push_str("\n| `lifeline check` |");
    let mut checks = Vec::new();
    for r in runs {
        let check = fs::read_to_string(r.out.join("check.txt")).unwrap_or_default();
        let exit = check
            .lines()
            .last()
            .and_then(|l| l.strip_prefix("exit "))
            .unwrap_or("none");
        if exit == "0" {
            md.push_str(" pass |");
        } else {
            let _ = write!(md, " **FAIL** (exit {exit}) |");
            failures.push(format!("{}: lifeline check exit {exit}", r.release));
        }
        checks.push((r, check));
    }
    md.push_str("\n| seconds (check; boot to power-off) |");
    for r in runs {
        let secs = fs::read_to_string(r.out.join("runner-secs")).unwrap_or_default();
        let _ = write!(md, " {}; {:.0} |", secs.trim(), r.wall.as_secs_f64());
    }
    md.push('\n');
    for (r, check) in checks {
        let _ = writeln!(
            md,
            "\n### {} ({}, Debian package {})\n\n`lifeline check` there:\n\n```\n{check}```",
            r.release, r.series, r.version
        );
    }
}

/// The commit the run tested, marked when the tree had other changes than this document.
pub(super) fn commit(ws: &Path) -> String {
    let git = |args: &[&str]| {
        let mut cmd = std::process::Command::new("git");
        xtask::process::capture("git", cmd.current_dir(ws).args(args)).unwrap_or_default()
    };
    let hash = git(&["rev-parse", "--short", "HEAD"]);
    let changed = git(&["status", "--porcelain", "--untracked-files=no"]);
    if changed.lines().all(|l| l.ends_with("docs/KERNELS.md")) {
        hash
    } else {
        format!("{hash} with local changes")
    }
}
