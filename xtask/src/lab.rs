//! `cargo xtask test` and `cargo xtask demo`. The lab builds network namespaces, mounts and
//! loads eBPF, so both need root; unit tests alone are a plain `cargo test`.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, anyhow, bail};
use xtask::process::{Output, capture, run};

use crate::Phases;

const LAB: &str = "lifeline-tests";

/// The README's test command, and what CI runs.
pub fn test(ws: &Path, phases: &mut Phases) -> Result<()> {
    require_root("test")?;
    phases.run("packages", crate::packages::ensure)?;
    // First and visibly: on a fresh machine setup installs the toolchain and bpf-linker, which
    // the agent's build script (run by `cargo test`) needs and never installs itself.
    crate::build_ebpf(ws, phases)?;
    phases.run("unit tests", || cargo(ws, "unit tests", &["test"]))?;
    if ws.join("tests/src/lib.rs").is_file() {
        phases.run("lab unit tests", || {
            cargo(ws, "lab unit tests", &["test", "-p", LAB, "--lib"])
        })?;
    }
    let build = ["build", "-p", "lifeline", "-p", LAB];
    phases.run("build", || {
        cargo(ws, "building lifeline and the lab", &build)
    })?;
    phases.run("go fixture", || crate::gofixture::build(ws))?;
    // The container lab test runs the image the README tells fleets to build.
    let bin = phases.run("musl build", || crate::image::release_musl(ws))?;
    let image = phases.run("image", || crate::oci::assemble(ws, &bin))?;
    let lifeline = target_dir(ws)?.join("debug/lifeline");
    let log = target_dir(ws)?.join("lab-quiet-lane.log");
    let env = [
        ("LIFELINE_BIN", lifeline.as_path()),
        ("LIFELINE_IMAGE", image.archive.as_path()),
    ];
    phases.run("lab tests", || {
        crate::lanes::run_lab_tests(ws, LAB, &env, &log)
    })
}

/// The README's main command: the black-hole scenario without and with lifeline.
pub fn demo(ws: &Path, phases: &mut Phases) -> Result<()> {
    require_root("demo")?;
    phases.run("packages", crate::packages::ensure)?;
    crate::build_ebpf(ws, phases)?;
    let build = ["build", "-p", "lifeline", "-p", LAB, "--bins"];
    phases.run("build", || {
        cargo(ws, "building lifeline and lab-demo", &build)
    })?;
    let target = target_dir(ws)?.join("debug");
    let mut demo = Command::new(target.join("lab-demo"));
    demo.current_dir(ws)
        .env("LIFELINE_BIN", target.join("lifeline"));
    phases.run("demo", || run("the demo", &mut demo, Output::Inherit))
}

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

/// The lab creates network namespaces and nftables rules and loads eBPF: root only. Checked
/// first, so a plain user learns it at once rather than after the unit tests.
pub(crate) fn require_root(command: &str) -> Result<()> {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uids = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .unwrap_or_default();
    if uids.split_whitespace().nth(1) == Some("0") {
        return Ok(());
    }
    bail!(
        "`cargo xtask {command}` needs root for the lab (network namespaces, nftables, eBPF); run it as root, e.g. `sudo -E env PATH=\"$PATH\" cargo xtask {command}`"
    )
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
