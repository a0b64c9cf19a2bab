//! The lab's one test binary, checked by `cargo xtask lint` and before the lab runs: nothing
//! under `tests/tests/` but `lab/` (any other file there would be a test binary of its own,
//! which no lane runs), and every file of `tests/tests/lab/` declared in its `main.rs` (a
//! module that is not declared is not compiled, so its tests would silently never run).

use std::{fs, path::Path};

use anyhow::{Context as _, Result, bail};

/// # Errors
/// When the tree cannot be read, or names each file that is out of place or undeclared.
pub(crate) fn check(ws: &Path) -> Result<()> {
    let tests = ws.join("tests/tests");
    let mut problems = Vec::new();
    for name in entries(&tests)? {
        if name != "lab" {
            problems.push(format!(
                "tests/tests/{name}: a test binary of its own; make it a module of the lab binary, tests/tests/lab/ (declared in its main.rs)"
            ));
        }
    }
    let lab = tests.join("lab");
    let main = fs::read_to_string(lab.join("main.rs"))
        .with_context(|| format!("cannot read {}", lab.join("main.rs").display()))?;
    problems.extend(undeclared(&main, &entries(&lab)?));
    for p in &problems {
        eprintln!("lab: {p}");
    }
    if !problems.is_empty() {
        bail!("the lab's test tree: {} problem(s) above", problems.len());
    }
    println!("lab: one test binary, every module of tests/tests/lab/ declared");
    Ok(())
}

fn entries(dir: &Path) -> Result<Vec<String>> {
    let rd = fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut out = Vec::new();
    for e in rd {
        out.push(e?.file_name().to_string_lossy().into_owned());
    }
    out.sort();
    Ok(out)
}

/// The files and folders of `lab/` (`NAME.rs`, `NAME/`) whose module `main.rs` does not declare.
fn undeclared(main: &str, entries: &[String]) -> Vec<String> {
    let declared: Vec<&str> = main
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    entries
        .iter()
        .filter(|e| e.as_str() != "main.rs")
        .map(|e| e.strip_suffix(".rs").unwrap_or(e))
        .filter(|m| !declared.contains(m))
        .map(|m| format!("tests/tests/lab/{m}: not declared in tests/tests/lab/main.rs (`mod {m};`): its tests never run"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_or_folder_without_its_mod_line_is_named() {
        let main = "//! doc\n\nmod blip;\nmod container;\n";
        let entries =
            ["blip.rs", "container", "container.rs", "idle.rs", "main.rs"].map(str::to_owned);
        let found = undeclared(main, &entries);
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("tests/tests/lab/idle:"), "{found:?}");
    }

    #[test]
    fn this_workspace_has_one_lab_binary() {
        let ws = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        check(ws).unwrap();
    }
}
