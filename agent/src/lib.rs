//! `lifeline`: heals black-holed TCP connections of a node daemon. See README.md and the code
//! map in docs/ARCHITECTURE.md: one folder per stage of the data path, from the kernel up.

mod act;
mod check;
mod cli;
mod daemon;
mod endpoint;
mod kernel;
mod node;
mod report;
mod run;
mod settings;
mod watch;

// The judge is its own crate, so the compiler keeps it pure; the agent names it as a stage.
use std::process::ExitCode;

use lifeline_judge as judge;

/// The whole `lifeline` command: parse `args` (with the program name first), run the
/// subcommand, and turn every failure into one line on stderr and an exit code.
#[must_use]
pub fn main(args: Vec<std::ffi::OsString>) -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!(
            "lifeline: error: internal error: {}",
            info.to_string().replace('\n', " ")
        );
    }));
    // First, while this is the only thread: every thread inherits the filter.
    let signals = node::signals::install();
    let command = match settings::command::read(args) {
        Ok(command) => command,
        Err(settings::config::CliError::Clap(e)) if !e.use_stderr() => {
            let _ = e.print(); // --help, --version
            return ExitCode::SUCCESS;
        }
        Err(settings::config::CliError::Clap(e)) => {
            // A usage error is bad input like any other: one line, exit 2 (clap's code).
            eprintln!(
                "lifeline: error: {} (see --help)",
                settings::config::one_line_clap(&e)
            );
            return ExitCode::from(2);
        }
        Err(settings::config::CliError::Config(msg)) => {
            eprintln!("lifeline: error: {msg}");
            return ExitCode::from(settings::config::EX_CONFIG);
        }
    };
    let result = match &command {
        settings::Command::Run(settings) => run::run(settings, &signals),
        settings::Command::Check(settings) => check::run(settings, &signals),
        settings::Command::Status { socket, json: true } => report::status::print_json(socket)
            .inspect_err(|e| {
                // Scripts asked for JSON: they get JSON, also about the failure (nothing was
                // printed unless the answer began as a JSON object).
                println!("{}", serde_json::json!({ "error": format!("{e:#}") }));
            }),
        settings::Command::Status {
            socket,
            json: false,
        } => report::status::fetch(socket).map(|snap| print!("{}", report::status::render(&snap))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lifeline: error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
