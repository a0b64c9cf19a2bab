//! The one reader of the command line: argv (and the config file) to the subcommand to run,
//! with its settings.

use std::{ffi::OsString, path::PathBuf};

use super::{
    Run,
    config::{CliError, parse_cli},
};
use crate::cli;

/// A subcommand and what it runs with.
#[derive(Debug)]
pub(crate) enum Command {
    Run(Box<Run>),
    /// `lifeline check`: the settings `run` would use.
    Check(Box<Run>),
    /// `lifeline status`: the running agent's socket, and whether to print raw JSON.
    Status {
        socket: PathBuf,
        json: bool,
    },
}

/// Parse `argv` (program name first), merge the config file, and build the settings.
///
/// # Errors
/// As `CliError` says; the messages are `parse_cli`'s.
pub(crate) fn read(argv: Vec<OsString>) -> Result<Command, CliError> {
    Ok(match parse_cli(argv)?.command {
        cli::CliCommand::Run(flags) => Command::Run(Box::new(Run::from_args(&flags))),
        cli::CliCommand::Check(flags) => Command::Check(Box::new(Run::from_args(&flags))),
        cli::CliCommand::Status(flags) => Command::Status {
            socket: flags.status_socket,
            json: flags.json,
        },
    })
}
