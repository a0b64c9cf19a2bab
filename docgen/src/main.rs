//! `lifeline-docgen OUTDIR`: the man pages (`lifeline.1` and `lifeline-<subcommand>.1`) and
//! the bash, zsh and fish completions of `lifeline`, rendered from the agent's own clap
//! definitions, so that they can never disagree with `--help`. `cargo xtask deb` runs it
//! and the Debian package installs what it writes.

#[allow(
    dead_code,
    unreachable_pub,
    reason = "the agent's command-line module, compiled here for its definitions only"
)]
#[path = "../../agent/src/cli/mod.rs"]
mod cli;

use std::{
    fs,
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::CommandFactory as _;
use clap_complete::Shell;

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: lifeline-docgen OUTDIR");
        return ExitCode::from(2);
    };
    match generate(&out) {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("lifeline-docgen: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes every page and completion under `out`; returns their paths.
fn generate(out: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut cmd = cli::Cli::command();
    cmd.build();
    let (man, comp) = (out.join("man"), out.join("completions"));
    fs::create_dir_all(&man)?;
    fs::create_dir_all(&comp)?;
    let mut files = vec![page(&man, "lifeline", cmd.clone())?];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("lifeline-{}", sub.get_name());
        files.push(page(&man, &name, sub.clone().name(name.clone()))?);
    }
    for (shell, file) in [
        (Shell::Bash, "lifeline"),
        (Shell::Zsh, "_lifeline"),
        (Shell::Fish, "lifeline.fish"),
    ] {
        let path = comp.join(file);
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut cmd, "lifeline", &mut buf);
        fs::write(&path, buf)?;
        files.push(path);
    }
    Ok(files)
}

fn page(dir: &Path, name: &str, cmd: clap::Command) -> std::io::Result<PathBuf> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    let path = dir.join(format!("{name}.1"));
    fs::write(&path, buf)?;
    Ok(path)
}
