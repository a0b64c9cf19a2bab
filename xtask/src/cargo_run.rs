//! The cargo that runs us and what it says about the workspace: every step that runs cargo or
//! needs the target directory (the lab, the image, the bench, the kernel matrix, the Go
//! fixture) asks here, so they all use one toolchain and one target directory.

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, anyhow};
use xtask::process::{Output, capture, run};

pub(crate) fn cargo(ws: &Path, step: &str, args: &[&str]) -> Result<()> {
    run(step, &mut cargo_cmd(ws, args), Output::Inherit)
}

/// The cargo that runs us (`cargo run` sets CARGO), so every step uses one toolchain.
pub(crate) fn cargo_cmd(ws: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(ws).args(args);
    cmd
}

/// The target directory cargo really uses (`CARGO_TARGET_DIR` or config may move it), to hand the
/// lab the absolute path of the `lifeline` binary.
pub(crate) fn target_dir(ws: &Path) -> Result<PathBuf> {
    let mut cmd = cargo_cmd(ws, &["metadata", "--format-version", "1", "--no-deps"]);
    let json = capture("finding the target directory", &mut cmd)?;
    json_string(&json, "target_directory")
        .map(PathBuf::from)
        .ok_or_else(|| {
            anyhow!("finding the target directory failed: no target_directory in `cargo metadata`")
        })
}

/// The string value of the first `"key":"..."` in `json`: enough for cargo metadata's
/// top-level path fields, without a JSON dependency.
pub(crate) fn json_string(json: &str, key: &str) -> Option<String> {
    let rest = &json[json.find(&format!("\"{key}\":\""))? + key.len() + 4..];
    let mut value = String::new();
    let mut chars = rest.chars();
    loop {
        match chars.next()? {
            '"' => return Some(value),
            '\\' => value.push(match chars.next()? {
                'n' => '\n',
                't' => '\t',
                other => other,
            }),
            c => value.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::json_string;

    #[test]
    fn reads_a_string_field_from_cargo_metadata() {
        let json = r#"{"packages":[],"target_directory":"/w/t\"x\\y","version":1}"#;
        assert_eq!(
            json_string(json, "target_directory").as_deref(),
            Some("/w/t\"x\\y")
        );
        assert_eq!(json_string(json, "workspace_root"), None);
    }
}
