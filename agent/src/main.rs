//! `lifeline`: heals black-holed TCP connections of a node daemon. See README.md.

mod action;
mod adopt;
mod cgroup;
mod cli;
mod clock;
mod daemon;
mod decide;
mod detect;
mod diag;
mod endpoint;
mod errors;
mod idle;
mod logging;
mod mounts;
mod owners;
mod probe;
mod readers;
mod run;
mod snapshot;
mod status;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("lifeline: error: internal error: {}", info.to_string().replace('\n', " "));
    }));
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    let result = match &cli.command {
        cli::Command::Run(args) => run::run(args),
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
