//! Parts of docs/BENCHMARKS.md that a bench part writes on its own (`cargo xtask bench
//! --fleet`, `--soak`, ...): each lives between `<!-- part:NAME -->` and `<!-- end:NAME -->`,
//! so a part re-run alone replaces only its own numbers, and the full run's rewrite of the
//! matrix carries every part's section over unchanged.

use std::path::Path;

use anyhow::{Context, Result};

/// Where parts go in a new file, and before which marker they are inserted.
const ANALYSIS: &str = "<!-- analysis -->";

fn begin(name: &str) -> String {
    format!("<!-- part:{name} -->")
}

fn end(name: &str) -> String {
    format!("<!-- end:{name} -->")
}

/// Replaces (or adds, before the analysis) the section `name` of the document at `path`.
///
/// # Errors
/// When the document cannot be read or written.
pub(crate) fn replace(path: &Path, name: &str, body: &str) -> Result<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let new = replaced(&old, name, body);
    std::fs::write(path, new).with_context(|| format!("writing {}", path.display()))
}

fn replaced(old: &str, name: &str, body: &str) -> String {
    let (b, e) = (begin(name), end(name));
    let section = format!("{b}\n{}\n{e}\n", body.trim_end());
    if let (Some(i), Some(j)) = (old.find(&b), old.find(&e))
        && i < j
    {
        let rest = old[j + e.len()..].trim_start_matches('\n');
        return format!("{}{section}{rest}", &old[..i]);
    }
    match old.find(ANALYSIS) {
        Some(i) => format!("{}{section}\n{}", &old[..i], &old[i..]),
        None => format!("{old}{}{section}", if old.is_empty() { "" } else { "\n" }),
    }
}

/// Every part section of `old` but those named in `except` (the rewrite makes them anew),
/// in order, for a rewrite of the rest of the document.
#[must_use]
pub(crate) fn all(old: &str, except: &[&str]) -> String {
    let mut out = String::new();
    let mut rest = old;
    while let Some(i) = rest.find("<!-- part:") {
        let after = &rest[i + "<!-- part:".len()..];
        let Some(name) = after.split_once(" -->").map(|(n, _)| n) else {
            break;
        };
        let e = end(name);
        let Some(j) = rest[i..].find(&e) else { break };
        if !except.contains(&name) {
            out.push_str(&rest[i..i + j + e.len()]);
            out.push_str("\n\n");
        }
        rest = &rest[i + j + e.len()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_added_before_the_analysis_then_replaced_in_place() {
        let doc = "# B\n\ntables\n<!-- analysis -->\n## Analysis\n";
        let one = replaced(doc, "fleet", "fleet v1");
        assert!(one.contains(
            "tables\n<!-- part:fleet -->\nfleet v1\n<!-- end:fleet -->\n\n<!-- analysis -->"
        ));
        let two = replaced(&one, "fleet", "fleet v2\n");
        assert!(
            two.contains("fleet v2") && !two.contains("fleet v1"),
            "{two}"
        );
        let three = replaced(&two, "soak", "soak v1");
        assert_eq!(all(&three, &[]).matches("<!-- part:").count(), 2, "{three}");
        assert_eq!(all(&three, &["soak"]).matches("<!-- part:").count(), 1);
        assert!(
            three.ends_with("<!-- analysis -->\n## Analysis\n"),
            "{three}"
        );
    }
}
