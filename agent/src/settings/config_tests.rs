use std::time::Duration;

use super::*;
use crate::cli::CliCommand;

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
            command: CliCommand::Run(run),
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
    let text = include_str!("../../../packaging/lifeline.toml");
    parse_with(text, &[]).expect("packaging/lifeline.toml must parse");
}

/// The `lifeline.toml` block of the `DaemonSet`'s `ConfigMap`: the lines of the block scalar
/// after `lifeline.toml: |`, with the block's indentation removed (enough YAML for the one
/// block this manifest has; the container lab test reads the whole manifest strictly).
fn configmap_toml(manifest: &str) -> String {
    let mut lines = manifest
        .lines()
        .skip_while(|l| l.trim() != "lifeline.toml: |");
    let key_indent = lines.next().map_or(0, |l| l.len() - l.trim_start().len());
    let block: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > key_indent)
        .collect();
    let indent = block
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    block
        .iter()
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn targets(args: &crate::cli::RunArgs) -> crate::settings::Targets {
    let root = std::path::Path::new("/");
    let watch = crate::settings::Run::from_args(args).watch;
    crate::settings::Targets::new(&watch, std::path::Path::new("/sys/fs/cgroup"), root)
        .expect("targets")
}

/// What the README documents as the node default, and what `run` does with no target flag.
#[test]
fn the_shipped_files_watch_the_documented_default_targets() {
    let default = parse_with("", &[]).expect("an empty file");
    let documented = targets(&default);
    assert_eq!(
        documented.describe(),
        ["cgroup /system.slice/kubelet.service", "endpoint clients"],
        "README: kubelet's unit cgroup plus every client of the endpoint"
    );
    let shipped = parse_with(include_str!("../../../packaging/lifeline.toml"), &[]).expect("toml");
    assert_eq!(targets(&shipped), documented, "packaging/lifeline.toml");
    let manifest = include_str!("../../../packaging/daemonset.yaml");
    let text = configmap_toml(manifest);
    assert!(text.contains("ports = [443, 6443]"), "block read: {text}");
    let configmap = parse_with(&text, &[]).expect("the ConfigMap's lifeline.toml");
    assert_eq!(targets(&configmap), documented, "the DaemonSet's ConfigMap");
}

/// The example file says its values are the built-in defaults: every value it sets is one.
#[test]
fn the_shipped_config_sets_only_built_in_defaults() {
    let mut default = parse_with("", &[]).expect("an empty file");
    let mut shipped =
        parse_with(include_str!("../../../packaging/lifeline.toml"), &[]).expect("toml");
    default.node.config = None;
    shipped.node.config = None;
    assert_eq!(format!("{shipped:?}"), format!("{default:?}"));
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
