//! Running child processes so that any failure comes back as one readable line.

use std::{
    ffi::OsStr,
    fmt, fs, io,
    os::unix::process::ExitStatusExt as _,
    path::Path,
    process::{Command, ExitStatus, Stdio},
};

use anyhow::{Context as _, Result, anyhow};

/// A step whose child process exited unsuccessfully. It is its own type so `cargo xtask demo`
/// can hand the child's exit code on (see [`StepFailed::exit_code`]).
#[derive(Debug)]
pub struct StepFailed {
    pub step: String,
    /// What ran, e.g. `cargo install`.
    pub program: String,
    pub status: ExitStatus,
    /// Where to look next, e.g. `; see /root/.cache/lifeline/logs/bpf-linker.log`.
    pub hint: String,
}

impl StepFailed {
    /// The child's exit code, or 128 + signal like a shell reports it.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        self.status
            .code()
            .or_else(|| self.status.signal().map(|s| 128 + s))
            .unwrap_or(1)
    }
}

impl fmt::Display for StepFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (step, program, hint) = (&self.step, &self.program, &self.hint);
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => write!(f, "{step} failed ({program} exited {code}){hint}"),
            (None, Some(sig)) => {
                write!(f, "{step} failed ({program} killed by signal {sig}){hint}")
            }
            (None, None) => write!(f, "{step} failed ({program}: {}){hint}", self.status),
        }
    }
}

impl std::error::Error for StepFailed {}

/// Where a child's output goes.
#[derive(Clone, Copy)]
pub enum Output<'a> {
    /// Straight to our stdout/stderr (tests, the demo: the user wants to watch).
    Inherit,
    /// Both to our stderr, with this hint on failure. Used for nested cargo builds: our stdout
    /// is `build-ebpf`'s result, or in a build script the channel for cargo directives.
    Stderr(&'a str),
    /// Into a log file that the error names (long one-time installs: quiet unless they fail).
    Log(&'a Path),
}

/// Runs `cmd` to completion; `step` says what it was for, in the error.
///
/// # Errors
/// When the program cannot be started or exits unsuccessfully ([`StepFailed`]).
pub fn run(step: &str, cmd: &mut Command, output: Output<'_>) -> Result<()> {
    let hint = match output {
        Output::Inherit => String::new(),
        Output::Stderr(hint) => {
            cmd.stdout(io::stderr());
            hint.to_owned()
        }
        Output::Log(path) => {
            let log = fs::File::create(path)
                .with_context(|| format!("{step} failed: cannot create {}", path.display()))?;
            cmd.stdout(log.try_clone()?).stderr(log);
            format!("; see {}", path.display())
        }
    };
    // CI has no stdin; nothing we run should ever wait for a prompt.
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .map_err(|e| spawn_error(step, cmd, &e))?;
    if status.success() {
        return Ok(());
    }
    Err(StepFailed {
        step: step.to_owned(),
        program: describe(cmd),
        status,
        hint,
    }
    .into())
}

/// Runs `cmd` and returns its trimmed stdout; on failure the error quotes its last stderr line.
///
/// # Errors
/// When the program cannot be started or exits unsuccessfully.
pub fn capture(step: &str, cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| spawn_error(step, cmd, &e))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        return Err(anyhow!(
            "{step} failed ({} {}: {last})",
            describe(cmd),
            out.status
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn spawn_error(step: &str, cmd: &Command, err: &io::Error) -> anyhow::Error {
    let program = cmd.get_program().to_string_lossy();
    if err.kind() == io::ErrorKind::NotFound {
        anyhow!("{step} failed: `{program}` not found; install it (rustup: https://rustup.rs)")
    } else {
        anyhow!("{step} failed: cannot run `{program}`: {err}")
    }
}

/// A short name for what ran: `cargo install`, not `/root/.cargo/bin/rustup run nightly-… cargo
/// install --version …`, so the one error line stays one line.
fn describe(cmd: &Command) -> String {
    let mut words: Vec<&OsStr> = Vec::new();
    words.push(
        Path::new(cmd.get_program())
            .file_name()
            .unwrap_or(cmd.get_program()),
    );
    words.extend(cmd.get_args());
    if words.len() >= 4 && words[0] == "rustup" && words[1] == "run" {
        words.drain(..3);
        words[0] = Path::new(words[0]).file_name().unwrap_or(words[0]);
    }
    let keep = if matches!(words[0].to_str(), Some("cargo" | "rustup")) {
        2
    } else {
        1
    };
    let words: Vec<_> = words
        .iter()
        .take(keep)
        .map(|w| w.to_string_lossy())
        .collect();
    words.join(" ")
}
