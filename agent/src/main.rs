//! `lifeline`: heals black-holed TCP connections of a node daemon. See README.md.

mod act;
mod adopt;
mod cgroup;
mod cgroup2;
mod check;
mod check_endpoint;
mod check_host;
mod check_probe;
mod check_watch;
mod cli;
mod clock;
mod config;
mod daemon;
mod diag;
mod due;
mod endpoint;
mod errors;
mod judge;
mod lock;
mod logging;
mod metrics;
mod metrics_http;
mod metrics_probe;
mod mirror;
mod mounts;
mod node;
mod node_args;
mod owners;
mod probe;
mod readers;
mod run;
mod seccomp;
mod snapshot;
mod sockopts;
mod status;
mod status_server;
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
        Err(config::CliError::Clap(e)) if !e.use_stderr() => {
            let _ = e.print(); // --help, --version
            return ExitCode::SUCCESS;
        }
        Err(config::CliError::Clap(e)) => {
            // A usage error is bad input like any other: one line, exit 2 (clap's code).
            eprintln!(
                "lifeline: error: {} (see --help)",
                config::one_line_clap(&e)
            );
            return ExitCode::from(2);
        }
        Err(config::CliError::Config(msg)) => {
            eprintln!("lifeline: error: {msg}");
            return ExitCode::from(config::EX_CONFIG);
        }
    };
    let result = match &cli.command {
        cli::Command::Run(args) => run::run(args),
        cli::Command::Check(args) => check::run(args),
        cli::Command::Status(args) if args.json => status::print_json(&args.status_socket)
            .inspect_err(|e| {
                // Scripts asked for JSON: they get JSON, also about the failure (nothing was
                // printed unless the answer began as a JSON object).
                println!("{}", serde_json::json!({ "error": format!("{e:#}") }));
            }),
        cli::Command::Status(args) => {
            status::fetch(&args.status_socket).map(|snap| print!("{}", status::render(&snap)))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lifeline: error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
