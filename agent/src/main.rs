//! `lifeline`: heals black-holed TCP connections of a node daemon. See README.md.

mod action;
mod adopt;
mod cgroup;
mod check;
mod check_probe;
mod check_watch;
mod cli;
mod clock;
mod config;
mod daemon;
mod decide;
mod detect;
mod diag;
mod endpoint;
mod errors;
mod idle;
mod judge;
mod lock;
mod logging;
mod metrics;
mod metrics_http;
mod mounts;
mod node;
mod node_args;
mod owners;
mod probe;
mod readers;
mod run;
mod snapshot;
mod status;
mod status_socket;
mod systemd;
mod watch;

use std::process::ExitCode;

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!(
            "lifeline: error: internal error: {}",
            info.to_string().replace('\n', " ")
        );
    }));
    let cli = match config::parse_cli(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(config::CliError::Clap(e)) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
        Err(config::CliError::Config(msg)) => {
            eprintln!("lifeline: error: {msg}");
            return ExitCode::from(config::EX_CONFIG);
        }
    };
    let result = match &cli.command {
        cli::Command::Run(args) => run::run(args),
        cli::Command::Check(args) => check::run(args),
        cli::Command::Status(args) => status::fetch(&args.status_socket).map(|(raw, snap)| {
            if args.json {
                println!("{raw}");
            } else {
                print!("{}", status::render(&snap));
            }
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lifeline: error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
