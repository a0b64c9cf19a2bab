//! The settings `run` and `check` get: built from a command line and a config file by the one
//! reader, with the values each stage takes, flags winning over the file.

use std::{
    ffi::OsString,
    net::SocketAddr,
    path::PathBuf,
    sync::atomic::{AtomicU32, Ordering},
    time::Duration,
};

use super::{ActionMode, Command, LogTarget, Run, SystemdBus, command::read, config::CliError};

/// `lifeline SUB --config FILE FLAGS...` through `command::read`, with `file` as the config.
fn settings(sub: &str, file: &str, flags: &[&str]) -> Result<Command, String> {
    // One directory per call: the tests run in parallel and each removes its own.
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lifeline-settings-test-{}-{}",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("lifeline.toml");
    std::fs::write(&path, file).map_err(|e| e.to_string())?;
    let mut argv: Vec<OsString> = vec!["lifeline".into(), sub.into(), "--config".into()];
    argv.push(path.into());
    argv.extend(flags.iter().map(OsString::from));
    let out = read(argv);
    let _ = std::fs::remove_dir_all(&dir);
    out.map_err(|e| match e {
        CliError::Config(e) => e,
        CliError::Clap(e) => format!("clap: {e}"),
    })
}

fn run(file: &str, flags: &[&str]) -> Run {
    match settings("run", file, flags) {
        Ok(Command::Run(s)) => *s,
        other => panic!("not run settings: {other:?}"),
    }
}

const FILE: &str = r#"
stall_timeout = "20s"
sweep_interval = "2s"
ports = [443]
comm = ["kubelet"]
hosts_file = "/etc/hosts.file"
on_orphan = "log"
restart_unit = "kubelet.service"
action = "restart"
systemd_bus = "user"
log = "json"
metrics_addr = "127.0.0.1:9100"
status_socket = "/run/file.sock"
"#;

#[test]
fn each_stage_gets_the_values_of_the_file() {
    let s = run(FILE, &[]);
    assert_eq!(s.judge.stall_timeout, Duration::from_secs(20));
    assert!(!s.judge.migrate, "on_orphan = log");
    assert_eq!(s.sweep.interval, Duration::from_secs(2));
    assert_eq!(s.watch.ports, [443]);
    assert_eq!(s.watch.comms, ["kubelet"]);
    assert_eq!(s.endpoint.ports, [443]);
    assert_eq!(s.endpoint.hosts_file, PathBuf::from("/etc/hosts.file"));
    assert_eq!(s.node.restart_unit.as_deref(), Some("kubelet.service"));
    assert_eq!(s.node.action, ActionMode::Restart);
    assert_eq!(s.node.systemd_bus, SystemdBus::User);
    assert_eq!(s.report.log, LogTarget::Json);
    let addr: SocketAddr = "127.0.0.1:9100".parse().unwrap();
    assert_eq!(s.report.metrics_addr, Some(addr));
    assert_eq!(s.report.status_socket, PathBuf::from("/run/file.sock"));
    assert!(
        s.config.is_some(),
        "the file given is the source check names"
    );
}

#[test]
fn flags_win_over_the_file_in_every_part() {
    let s = run(
        FILE,
        &[
            "--stall-timeout=5s",
            "--sweep-interval=500ms",
            "--ports=6443,8443",
            "--cgroup=lab.slice/x.service",
            "--on-orphan=migrate",
            "--action=kill",
            "--systemd-bus=unix:path=/tmp/bus",
            "--log=stderr",
            "--status-socket=/run/flag.sock",
        ],
    );
    assert_eq!(s.judge.stall_timeout, Duration::from_secs(5));
    assert!(s.judge.migrate);
    assert_eq!(s.sweep.interval, Duration::from_millis(500));
    assert_eq!(s.watch.ports, [6443, 8443]);
    assert_eq!(s.endpoint.ports, [6443, 8443]);
    let cgroup = [PathBuf::from("lab.slice/x.service")];
    assert_eq!(s.watch.cgroups, cgroup);
    assert_eq!(
        s.endpoint.trusted_cgroups, cgroup,
        "discovery trusts the targets"
    );
    assert_eq!(s.watch.comms, ["kubelet"], "not given: the file's");
    assert_eq!(s.node.action, ActionMode::Kill);
    let bus = SystemdBus::Address("unix:path=/tmp/bus".into());
    assert_eq!(s.node.systemd_bus, bus);
    assert_eq!(s.report.log, LogTarget::Stderr);
    assert_eq!(s.report.status_socket, PathBuf::from("/run/flag.sock"));
}

#[test]
fn check_builds_the_settings_run_would() {
    let Ok(Command::Check(check)) = settings("check", FILE, &["--stall-timeout=7s"]) else {
        panic!("not check settings");
    };
    let run = run(FILE, &["--stall-timeout=7s"]);
    assert_eq!(check.judge.stall_timeout, run.judge.stall_timeout);
    assert_eq!(check.node.systemd_bus, run.node.systemd_bus);
    assert_eq!(check.watch.keepalive_map(), run.watch.keepalive_map());
}

#[test]
fn silent_rule_defaults_to_twelve_probes_after_idle() {
    let silence = |flags: &[&str]| run("", flags).watch.silence();
    // The first unanswered probe, 1 s to the second, then 11 fast probes 100 ms apart.
    assert_eq!(silence(&[]), Ok(Some((Duration::from_millis(2100), 12))));
    // Without fast probes: 1 s idle + 12 probes 1 s apart.
    assert_eq!(
        silence(&["--fast-probes", "off"]),
        Ok(Some((Duration::from_secs(13), 12)))
    );
    let w = run("", &[]).watch.keepalive_map();
    assert_eq!((w.idle_s, w.intvl_s, w.cnt), (1, 1, 20));
    assert_eq!(silence(&["--keepalive", "off"]), Ok(None));
    let e = silence(&["--keepalive", "2s,1s,12"]).unwrap_err();
    assert!(e.contains("COUNT 12 must exceed --silent-probes 12"), "{e}");
    let s = silence(&["--keepalive", "5s,2s,6", "--silent-probes", "3"]);
    assert_eq!(s, Ok(Some((Duration::from_millis(2200), 3))));
    let s = silence(&[
        "--keepalive=5s,2s,6",
        "--silent-probes=3",
        "--fast-probes=off",
    ]);
    assert_eq!(s, Ok(Some((Duration::from_secs(11), 3))));
}

#[test]
fn the_keepalive_entry_carries_the_flags() {
    let w = run("", &["--keepalive=5s,2s,30", "--user-timeout=20s"]).watch;
    let k = w.keepalive_map();
    assert_eq!(
        (k.idle_s, k.intvl_s, k.cnt, k.user_timeout_ms),
        (5, 2, 30, 20_000)
    );
    assert_eq!(w.keepalive_text(), "5s,2s,30");
    let off = run("", &["--keepalive=off"]).watch;
    assert_eq!(
        off.keepalive_map().cnt,
        lifeline_common::Keepalive::default().cnt
    );
    assert_eq!(off.keepalive_text(), "off");
}

#[test]
fn status_reads_its_socket_and_format() {
    let argv = [
        "lifeline",
        "status",
        "--json",
        "--status-socket=/run/x.sock",
    ];
    let Ok(Command::Status { socket, json }) = read(argv.map(OsString::from).to_vec()) else {
        panic!("not status");
    };
    assert_eq!((socket, json), (PathBuf::from("/run/x.sock"), true));
}
