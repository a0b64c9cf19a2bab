//! The pod's system-call helper (`tests/pod/syscalls.rs`): built static for musl with plain
//! `rustc` (std only; the toolchain's musl target is the one `cargo xtask image` uses), so it
//! runs in the FROM-scratch image, and its report read back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::infra::paths::workspace;

/// The helper's name in the directory it is built into.
pub const NAME: &str = "pod-syscalls";

/// What one call got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Errno(i32),
    /// A number the helper reports (`NAME count N`).
    Count(u32),
}

/// Builds the helper into `dir`; its path.
///
/// # Errors
/// When rustc or its musl target is missing, or the build fails.
pub fn build(dir: &Path) -> Result<PathBuf> {
    let out = dir.join(NAME);
    let src = workspace().join("tests/pod/syscalls.rs");
    let mut c = Command::new("rustc");
    c.current_dir(workspace())
        .args([
            "--edition",
            "2024",
            "-O",
            "--target",
            "x86_64-unknown-linux-musl",
        ])
        .arg("-o")
        .arg(&out)
        .arg(&src);
    crate::infra::cmd::run(&mut c).context(
        "building the pod's syscall helper (rustup target add x86_64-unknown-linux-musl)",
    )?;
    Ok(out)
}

/// The helper's report: call name to outcome.
///
/// # Errors
/// On a line that is neither `NAME ok`, `NAME errno N` nor `NAME count N`.
pub fn parse(text: &str) -> Result<BTreeMap<String, Outcome>> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let outcome = match f.as_slice() {
            [_, "ok"] => Outcome::Ok,
            [_, "errno", n] => Outcome::Errno(n.parse().with_context(|| format!("`{line}`"))?),
            [_, "count", n] => Outcome::Count(n.parse().with_context(|| format!("`{line}`"))?),
            _ => bail!("not a report line: `{line}`"),
        };
        out.insert(f[0].to_owned(), outcome);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{Outcome, parse};

    #[test]
    fn reads_both_kinds_of_line_and_refuses_others() {
        let r = parse("mount errno 1\nunix ok\nseccomp-filters count 1\n").unwrap();
        assert_eq!(r["seccomp-filters"], Outcome::Count(1));
        assert_eq!(r["mount"], Outcome::Errno(1));
        assert_eq!(r["unix"], Outcome::Ok);
        assert!(parse("mount maybe").is_err());
    }
}
