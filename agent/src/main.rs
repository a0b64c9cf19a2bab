//! The `lifeline` binary: everything is in the library (see lib.rs).

fn main() -> std::process::ExitCode {
    lifeline::main(std::env::args_os().collect())
}
