//! The judge's purity gate of `cargo xtask lint`: the crate `lifeline-judge` is the rules and
//! nothing else, so nothing that does I/O may be among its normal dependencies, however deep
//! (`cargo tree -p lifeline-judge -e normal`). Its own imports cannot reach such a crate then:
//! the compiler keeps it pure.

use std::{path::Path, process::Command};

use anyhow::{Result, bail};
use xtask::process::capture;

/// The crate kept pure.
pub(crate) const JUDGE: &str = "lifeline-judge";

/// Crates (and their families: `tokio-util`, `hickory-proto`, `clap_derive`) that do I/O or
/// read the command line, never to be a dependency of the judge.
const FORBIDDEN: [&str; 8] = [
    "aya",
    "aya-log",
    "tokio",
    "clap",
    "netlink",
    "zbus",
    "hickory",
    "tracing-subscriber",
];

/// The first forbidden crate in `cargo tree --prefix none` output (one `name vX.Y.Z ...` a
/// line), with the rule it broke.
#[must_use]
pub(crate) fn forbidden(tree: &str) -> Option<(&str, &'static str)> {
    tree.lines()
        .filter_map(|l| l.split_whitespace().next())
        .find_map(|name| {
            FORBIDDEN
                .iter()
                .find(|f| {
                    name.strip_prefix(**f)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '_']))
                })
                .map(|f| (name, *f))
        })
}

/// # Errors
/// When `cargo tree` fails, or the judge depends on a forbidden crate (named).
pub(crate) fn check(ws: &Path) -> Result<()> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(ws)
        .args(["tree", "-p", JUDGE, "-e", "normal", "--prefix", "none"]);
    let tree = capture("cargo tree (the judge's dependencies)", &mut cmd)?;
    if let Some((name, rule)) = forbidden(&tree) {
        bail!(
            "the judge must stay pure: `cargo tree -p {JUDGE} -e normal` contains {name} \
             (no {rule}: the loop does the I/O and hands the judge its facts)"
        );
    }
    println!(
        "purity: {JUDGE} depends on none of {}",
        FORBIDDEN.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::forbidden;

    #[test]
    fn names_the_first_io_crate_and_its_family_but_not_lookalikes() {
        let pure = "lifeline-judge v0.1.0 (/w/judge)\nlifeline-common v0.1.0 (/w/common)\n\
                    serde v1.0.228\nserde_derive v1.0.228\ntokenizer-ish v1.0.0\n";
        assert_eq!(forbidden(pure), None, "tokenizer-ish is not tokio");
        let io = format!("{pure}aya-obj v0.2.1\ntokio v1.48.0\n");
        assert_eq!(forbidden(&io), Some(("aya-obj", "aya")));
        assert_eq!(
            forbidden("clap_derive v4.5.0\n"),
            Some(("clap_derive", "clap"))
        );
        assert_eq!(
            forbidden("netlink-sys v0.8.0 (*)\n"),
            Some(("netlink-sys", "netlink"))
        );
        assert_eq!(
            forbidden("tracing-subscriber v0.3.20\n"),
            Some(("tracing-subscriber", "tracing-subscriber"))
        );
        assert_eq!(
            forbidden("tracing v0.1.41\n"),
            None,
            "tracing itself is a facade"
        );
    }
}
