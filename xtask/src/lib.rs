//! Build tooling for lifeline, shared by `cargo xtask` and the agent's build script.
//!
//! The eBPF object is built by exactly one routine, [`ebpf::build`]: `cargo xtask build-ebpf`
//! calls it, and so does `agent/build.rs` (through [`ebpf::build_script`]) right before it embeds
//! the object, so the agent never embeds an object older than its sources. The build installs
//! nothing: [`setup`] (`cargo xtask setup`, run first by every command that needs the object)
//! installs the pinned nightly and bpf-linker, and the build names it when they are missing.
//! Because this library is compiled as a build-dependency of the agent, it depends on anyhow
//! and nothing else.
//!
//! Every error is meant to be printed as one line (`{:#}`): it names the step that failed and
//! what to do next.

pub mod cargo_env;
pub mod ebpf;
pub mod linker;
pub mod process;
pub mod setup;
pub mod toolchain;

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use anyhow::{Context as _, Result, bail};

/// Where things that must outlive `target/` live: the LLVM prefix bpf-linker is linked against
/// (its RUNPATH points there, so it has to stay put) and the logs of the one-time installs.
///
/// # Errors
/// When neither `XDG_CACHE_HOME` nor `HOME` is set.
pub fn cache_dir() -> Result<PathBuf> {
    let base = match env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".cache"),
            None => bail!("finding a cache directory failed: set HOME or XDG_CACHE_HOME"),
        },
    };
    Ok(base.join("lifeline"))
}

/// Runs a one-time install step: announced and timed (it takes minutes, possibly inside a
/// build script), its output kept in `<cache>/logs/<log_name>`, whose path it returns.
pub(crate) fn install(step: &str, log_name: &str, cmd: &mut Command) -> Result<PathBuf> {
    let dir = cache_dir()?.join("logs");
    fs::create_dir_all(&dir)
        .with_context(|| format!("{step} failed: cannot create {}", dir.display()))?;
    let log = dir.join(log_name);
    note(&format!("{step} (one time; log: {})", log.display()));
    let start = Instant::now();
    process::run(step, cmd, process::Output::Log(&log))?;
    note(&format!(
        "{step}: done in {:.0}s",
        start.elapsed().as_secs_f64()
    ));
    Ok(log)
}

/// The workspace root: the nearest ancestor of `start` (itself included) whose Cargo.toml has a
/// `[workspace]` table. A build script knows only its own package's directory.
///
/// # Errors
/// When no such ancestor exists.
pub fn workspace_root(start: &Path) -> Result<PathBuf> {
    for dir in start.ancestors() {
        let Ok(manifest) = fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if manifest.lines().any(|line| line.trim() == "[workspace]") {
            return Ok(dir.to_path_buf());
        }
    }
    bail!(
        "finding the workspace failed: no Cargo.toml with [workspace] above {}",
        start.display()
    )
}

/// `$CARGO_HOME`, else `~/.cargo`: where rustup-init puts rustup and `cargo install` binaries.
#[must_use]
pub fn cargo_home() -> PathBuf {
    match env::var_os("CARGO_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env::var_os("HOME").unwrap_or_default()).join(".cargo"),
    }
}

/// Looks `name` up on PATH like a shell would.
#[must_use]
pub fn which(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Progress notes go to stderr: stdout belongs to `build-ebpf`'s result and, in a build
/// script, to cargo's `cargo::` directives.
pub(crate) fn note(message: &str) {
    eprintln!("xtask: {message}");
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::workspace_root;

    #[test]
    fn finds_this_workspace_from_a_member() {
        let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(workspace_root(xtask).unwrap(), xtask.parent().unwrap());
    }

    #[test]
    fn no_workspace_is_an_error() {
        let err = workspace_root(Path::new("/proc/self")).unwrap_err();
        assert!(format!("{err:#}").starts_with("finding the workspace failed"));
    }
}
