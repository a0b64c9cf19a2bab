//! The import gate of `cargo xtask lint`: in each crate's `src/` tree (its binaries under
//! `src/bin/` and its test code left out), no two modules that are not ancestor and
//! descendant of each other import each other, directly or around a circle, and the
//! "only imported by" rules hold. It also prints each crate's longest chain of imports.
//! Granularity is the file: a file is one module, inline modules count as their file's.

mod graph;
mod lexer;
mod resolve;
mod rules;
mod scan;
#[cfg(test)]
mod tests;
mod use_tree;

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, bail};
use graph::Graph;
use resolve::Module;
use rules::{OnlyFrom, show};

/// A crate the gate reads, and its rules.
struct Crate {
    name: &'static str,
    src: &'static str,
    rules: &'static [OnlyFrom],
    /// Top-level modules from the bottom up: each may import only those in earlier groups.
    layers: &'static [&'static [&'static str]],
}

const CRATES: [Crate; 5] = [
    Crate {
        name: "agent",
        src: "agent/src",
        // Only settings turns the command line into what the stages run with.
        rules: &[OnlyFrom {
            module: "cli",
            importers: &["settings"],
        }],
        // The stages of the data path, as docs/ARCHITECTURE.md's code map lists them.
        layers: &[
            &["cli"],
            &["settings"],
            &["node"],
            &["kernel"],
            &["endpoint"],
            &["watch"],
            &["act"],
            &["report"],
            &["daemon"],
            &["run", "check"],
        ],
    },
    Crate {
        name: "judge",
        src: "judge/src",
        rules: &[],
        layers: &[],
    },
    Crate {
        name: "xtask",
        src: "xtask/src",
        rules: &[],
        layers: &[],
    },
    Crate {
        name: "bench",
        src: "bench/src",
        rules: &[],
        layers: &[],
    },
    Crate {
        name: "tests",
        src: "tests/src",
        rules: &[],
        layers: &[],
    },
];

/// The agent's stages from the bottom up, as the gate enforces them (docs/ARCHITECTURE.md's
/// code map lists them in this order: `cargo xtask lint` checks that too).
pub(crate) fn agent_layers() -> &'static [&'static [&'static str]] {
    CRATES[0].layers
}

/// What the gate found in one crate.
pub(crate) struct Report {
    pub modules: usize,
    pub chain: Vec<Module>,
    /// One line each: a circle, or an import that breaks a rule.
    pub problems: Vec<String>,
}

/// # Errors
/// When a source tree cannot be read, or names every circle and broken rule.
pub(crate) fn check(ws: &Path) -> Result<()> {
    let mut problems = Vec::new();
    for krate in &CRATES {
        let files = read_tree(&ws.join(krate.src))?;
        let report = analyse(krate.name, &files, krate.rules, krate.layers);
        let chain: Vec<String> = report.chain.iter().map(|m| show(m)).collect();
        println!(
            "imports: {}: {} modules, longest chain {} layers: {}",
            krate.name,
            report.modules,
            chain.len(),
            chain.join(" -> ")
        );
        problems.extend(report.problems);
    }
    for p in &problems {
        eprintln!("{p}");
    }
    if !problems.is_empty() {
        bail!(
            "the import gate failed: {} problem(s) above",
            problems.len()
        );
    }
    Ok(())
}

/// The import graph of one crate from its files (module path, source), and what is wrong in
/// it: circles, broken rules, and imports up the `layers` (see [`rules::upward`]).
#[must_use]
pub(crate) fn analyse(
    krate: &str,
    files: &[(Module, String)],
    rules: &[OnlyFrom],
    layers: &[&[&str]],
) -> Report {
    let scans: Vec<(Module, scan::Scan)> = files
        .iter()
        .map(|(m, src)| (m.clone(), scan::scan(&lexer::tokens(src), m)))
        .filter(|(_, s)| !s.test_only)
        .collect();
    let test_code: Vec<Module> = scans
        .iter()
        .flat_map(|(m, s)| {
            s.test_children
                .iter()
                .map(move |c| [m.as_slice(), std::slice::from_ref(c)].concat())
        })
        .collect();
    let code: Vec<(Module, Vec<scan::Written>)> = scans
        .into_iter()
        .filter(|(m, _)| !test_code.iter().any(|t| m.starts_with(t)))
        .map(|(m, s)| (m, s.paths))
        .collect();
    let modules = code
        .iter()
        .map(|(m, _)| m.clone())
        .chain([Vec::new()])
        .collect();
    let graph = Graph::new(resolve::imports(&code, &modules));
    let mut problems: Vec<String> = graph
        .circles()
        .iter()
        .map(|c| {
            let names: Vec<String> = c.iter().map(|m| show(m)).collect();
            format!("import circle in {krate}: {}", names.join(" -> "))
        })
        .collect();
    problems.extend(rules::broken(krate, &graph, rules));
    problems.extend(rules::upward(krate, &graph, layers));
    Report {
        modules: modules.len(),
        chain: graph.longest_chain(),
        problems,
    }
}

/// Every module file under `src` with its module path; `src/bin/` and `*tests*.rs` skipped.
fn read_tree(src: &Path) -> Result<Vec<(Module, String)>> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        let mut paths: Vec<PathBuf> = entries
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        paths.sort();
        for path in paths {
            if path.is_dir() {
                if path != src.join("bin") {
                    dirs.push(path);
                }
                continue;
            }
            let Some(module) = module_of(src, &path) else {
                continue;
            };
            let text =
                fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            out.push((module, text));
        }
    }
    Ok(out)
}

/// `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs` the root. None: not a module
/// file, or test code by name.
fn module_of(src: &Path, path: &Path) -> Option<Module> {
    let rel = path.strip_prefix(src).ok()?.with_extension("");
    if path.extension()? != "rs" || path.file_stem()?.to_str()?.contains("tests") {
        return None;
    }
    let mut segs: Module = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = segs.last()?.as_str();
    if last == "mod" || (segs.len() == 1 && (last == "lib" || last == "main")) {
        segs.pop();
    }
    Some(segs)
}
