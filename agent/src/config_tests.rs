use std::time::Duration;

use super::*;
use crate::cli::Command;

fn parse_with(file: &str, flags: &[&str]) -> Result<crate::cli::RunArgs, String> {
    let dir = std::env::temp_dir().join(format!(
        "lifeline-config-test-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("lifeline.toml");
    std::fs::write(&path, file).map_err(|e| e.to_string())?;
    let mut argv: Vec<OsString> = vec![
        "lifeline".into(),
        "run".into(),
        "--config".into(),
        path.clone().into(),
    ];
    argv.extend(flags.iter().map(OsString::from));
    let out = parse_cli(argv);
    let _ = std::fs::remove_dir_all(&dir);
    match out {
        Ok(Cli {
            command: Command::Run(run),
        }) => Ok(*run),
        Ok(_) => Err("not run".into()),
        Err(CliError::Config(e)) => Err(e),
        Err(CliError::Clap(e)) => Err(format!("clap: {e}")),
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

#[test]
fn file_fills_unset_flags_and_flags_win() {
    let file = "stall_timeout = \"7s\"\nports = [443, 6443, 8443]\ndry_run = true\ncomm = [\"kubelet\"]\nmax_restarts = 2\nsweep_interval = \"2s\"\n";
    let args = parse_with(file, &["--sweep-interval", "3s"]).expect("valid");
    assert_eq!(args.stall_timeout, Duration::from_secs(7));
    assert_eq!(args.ports, vec![443, 6443, 8443]);
    assert!(args.dry_run);
    assert_eq!(args.comms, vec!["kubelet".to_owned()]);
    assert_eq!(args.node.max_restarts, 2);
    assert_eq!(
        args.sweep_interval,
        Duration::from_secs(3),
        "the flag wins over the file"
    );
}

#[test]
fn comma_separated_ports_in_a_string_work() {
    assert_eq!(
        parse_with("ports = \"443,6443\"", &[])
            .expect("valid")
            .ports,
        vec![443, 6443]
    );
}

#[test]
fn errors_name_the_key_the_value_and_what_is_allowed() {
    let e = parse_with("stall_timeot = \"5s\"", &[]).unwrap_err();
    assert!(
        e.contains("unknown key 'stall_timeot'") && e.contains("stall_timeout"),
        "{e}"
    );
    let e = parse_with("stall_timeout = \"-5s\"", &[]).unwrap_err();
    assert!(
        e.contains("stall_timeout") && e.contains("-5s") && e.contains("duration"),
        "{e}"
    );
    let e = parse_with("dry_run = \"yes\"", &[]).unwrap_err();
    assert!(e.contains("dry_run") && e.contains("true or false"), "{e}");
    let e = parse_with("max_restarts = 1000", &[]).unwrap_err();
    assert!(
        e.contains("max_restarts") && e.contains("1000") && e.contains("60"),
        "{e}"
    );
    let e = parse_with("log = \"syslog\"", &[]).unwrap_err();
    assert!(e.contains("log") && e.contains("journald"), "{e}");
    let e = parse_with("stall_timeout = [\"1s\"]", &[]).unwrap_err();
    assert!(e.contains("single value"), "{e}");
    let e = parse_with("config = \"/x\"", &[]).unwrap_err();
    assert!(e.contains("unknown key 'config'"), "{e}");
    let e = parse_with("ports = [", &[]).unwrap_err();
    assert!(!e.contains('\n') && e.contains("line 1"), "{e}");
}

#[test]
fn a_missing_explicit_file_is_an_error() {
    let argv = ["lifeline", "run", "--config", "/nonexistent/lifeline.toml"]
        .map(OsString::from)
        .to_vec();
    match parse_cli(argv) {
        Err(CliError::Config(e)) => assert!(
            e.contains("/nonexistent/lifeline.toml") && e.contains("cannot read"),
            "{e}"
        ),
        _ => panic!("expected a config error"),
    }
}

#[test]
fn the_example_config_is_valid() {
    let text = include_str!("../../packaging/lifeline.toml");
    parse_with(text, &[]).expect("packaging/lifeline.toml must parse");
}

#[test]
fn the_restart_backoff_is_configurable_and_checked() {
    let args = parse_with("restart_backoff = \"5s\"\n", &[]).unwrap();
    assert_eq!(args.node.restart_backoff, Duration::from_secs(5));
    let args = parse_with("", &[]).unwrap();
    assert_eq!(args.node.restart_backoff, Duration::from_mins(1), "default");
    let e = parse_with("restart_backoff = \"100ms\"\n", &[]).unwrap_err();
    assert!(
        e.contains("restart_backoff") && e.contains("100ms") && e.contains("1s to 30m"),
        "{e}"
    );
}
