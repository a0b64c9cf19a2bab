//! The docs' maps of the tree, checked against the tree by `cargo xtask lint`: README's Layout
//! table names every top-level folder and no other, and docs/ARCHITECTURE.md's code map names
//! every stage folder of `agent/src/`, in the order of the import gate's layers (the order
//! the gate enforces is the order the map describes).

use std::{fs, path::Path};

use anyhow::{Context as _, Result, bail};

/// # Errors
/// When a doc cannot be read, or names each folder the docs and the tree disagree on.
pub(crate) fn check(ws: &Path) -> Result<()> {
    let read = |p: &str| fs::read_to_string(ws.join(p)).with_context(|| format!("cannot read {p}"));
    let mut problems = Vec::new();
    let listed = first_cells(&read("README.md")?, "## Layout");
    let folders = dirs(ws, ws)?;
    problems.extend(differ("README.md's Layout table", &listed, &folders));
    let map = first_cells(&read("docs/ARCHITECTURE.md")?, "## Code map");
    let stages = dirs(ws, &ws.join("agent/src"))?;
    problems.extend(differ("docs/ARCHITECTURE.md's code map", &map, &stages));
    let layers: Vec<String> = crate::imports::agent_layers()
        .iter()
        .flat_map(|g| g.iter().map(|m| format!("{m}/")))
        .collect();
    if map != layers && problems.is_empty() {
        problems.push(format!(
            "docs/ARCHITECTURE.md's code map lists the stages as {} but the import gate layers them as {}",
            map.join(" "),
            layers.join(" ")
        ));
    }
    for p in &problems {
        eprintln!("layout: {p}");
    }
    if !problems.is_empty() {
        bail!(
            "the docs' maps of the tree are out of date: {} problem(s) above",
            problems.len()
        );
    }
    println!("layout: README's Layout table and the code map match the tree");
    Ok(())
}

/// The folders a table under `heading` names: each row's first cell, when its first
/// backticked word is a folder (`x/`), gives every backticked folder in that cell.
fn first_cells(doc: &str, heading: &str) -> Vec<String> {
    let Some(start) = doc.find(&format!("\n{heading}\n")) else {
        return Vec::new();
    };
    let section = &doc[start + heading.len() + 2..];
    let section = section.find("\n## ").map_or(section, |end| &section[..end]);
    let mut out = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let cell = row[1..].split('|').next().unwrap_or_default();
        let words: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
        if words.first().is_some_and(|w| w.ends_with('/')) {
            out.extend(
                words
                    .iter()
                    .filter(|w| w.ends_with('/'))
                    .map(|w| (*w).to_owned()),
            );
        }
    }
    out
}

/// The folders in `dir` (`name/`), without hidden ones and cargo's `target/`.
fn dirs(ws: &Path, dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let entries = fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for e in entries {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let hidden = name.starts_with('.') || (dir == ws && name == "target");
        if e.file_type()?.is_dir() && !hidden {
            out.push(format!("{name}/"));
        }
    }
    Ok(out)
}

fn differ(what: &str, listed: &[String], tree: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for f in tree.iter().filter(|f| !listed.contains(f)) {
        out.push(format!("{what} does not list {f}"));
    }
    for f in listed.iter().filter(|f| !tree.contains(f)) {
        out.push(format!("{what} lists {f}, which does not exist"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "intro\n## Code map\n\n| folder | job |\n|---|---|\n| `cli/` | flags |\n\
        | `judge` (crate `judge/`) | rules |\n| `run/`, `check/` | commands |\n\n## Glossary\n\
        | `glossary/` | not a map |\n";

    #[test]
    fn the_map_is_each_rows_folders_in_order_and_only_under_its_heading() {
        assert_eq!(first_cells(DOC, "## Code map"), ["cli/", "run/", "check/"]);
        assert!(first_cells(DOC, "## Layout").is_empty());
    }

    #[test]
    fn a_folder_missing_from_the_docs_and_one_only_in_the_docs_are_named() {
        let listed = ["cli/".to_owned(), "gone/".to_owned()];
        let tree = ["cli/".to_owned(), "new/".to_owned()];
        assert_eq!(
            differ("map", &listed, &tree),
            [
                "map does not list new/",
                "map lists gone/, which does not exist"
            ]
        );
    }

    #[test]
    fn this_workspace_matches_its_docs() {
        let ws = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        check(ws).unwrap();
    }
}
