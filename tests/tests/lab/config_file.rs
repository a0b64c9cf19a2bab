//! Scenario (d): the config file. Bad files end in one line naming the key, the
//! value and what is allowed, with exit code 78 (`EX_CONFIG`); a good file really configures
//! the agent, and a flag on the command line wins over it.

use std::process::Command;
use std::time::Duration;

use lifeline_tests::infra::paths::lifeline;
use lifeline_tests::{NetNs, Proc, TempDir, require_root};

const EX_CONFIG: i32 = 78;

/// Runs `lifeline ARGS --config FILE` (FILE holding `text`) in a fresh network namespace,
/// bounded: an agent that starts instead of failing is killed after 20 s.
fn run_with(text: Option<&str>, args: &[&str]) -> (Option<i32>, String) {
    require_root();
    let ns = NetNs::new("k").expect("netns");
    let dir = TempDir::new().expect("tempdir");
    let path = dir.path().join("lifeline.toml");
    if let Some(text) = text {
        std::fs::write(&path, text).expect("write config");
    }
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", ns.path()))
        .arg("--")
        .arg(lifeline().expect("lifeline binary"))
        .args(args)
        .arg("--config")
        .arg(&path)
        .arg("--status-socket")
        .arg(dir.path().join("status.sock"));
    let mut p = Proc::spawn("lifeline", cmd).expect("spawn");
    let status = p.wait_timeout(Duration::from_secs(20));
    if status.is_none() {
        p.kill();
    }
    (status.and_then(|s| s.code()), p.stderr_text())
}

fn assert_config_error(text: Option<&str>, names: &[&str]) {
    let (code, stderr) = run_with(text, &["run"]);
    eprintln!("{text:?}: exit {code:?}: {stderr}");
    assert_eq!(code, Some(EX_CONFIG), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "want one line, got:\n{stderr}");
    assert!(lines[0].starts_with("lifeline: error: config "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for n in names {
        assert!(lines[0].contains(n), "{n:?} missing from: {stderr}");
    }
}

#[test]
fn unknown_key_is_named_with_the_allowed_ones() {
    assert_config_error(
        Some("stall_timout = \"5s\"\n"),
        &[
            "unknown key 'stall_timout'",
            "allowed keys:",
            "stall_timeout",
        ],
    );
}

#[test]
fn wrong_type_is_named() {
    assert_config_error(
        Some("max_kills_per_minute = \"many\"\n"),
        &["max_kills_per_minute", "\"many\"", "invalid digit"],
    );
    assert_config_error(Some("dry_run = 1\n"), &["dry_run", "true or false"]);
}

#[test]
fn negative_timeout_is_named() {
    assert_config_error(
        Some("stall_timeout = \"-5s\"\n"),
        &["stall_timeout", "-5s", "duration"],
    );
}

#[test]
fn out_of_range_and_bad_choice_say_what_is_allowed() {
    assert_config_error(Some("ports = [443, 0]\n"), &["ports", "1 to 65535"]);
    assert_config_error(
        Some("log = \"syslog\"\n"),
        &["log", "syslog", "possible values", "journald"],
    );
}

#[test]
fn syntax_error_has_line_and_column() {
    assert_config_error(
        Some("ports = [443]\nstall_timeout = \n"),
        &["line 2", "column"],
    );
}

#[test]
fn missing_explicit_file_is_an_error() {
    assert_config_error(None, &["lifeline.toml", "No such file"]);
}

#[test]
fn unreadable_file_is_an_error() {
    // Root reads any mode, so drop to nobody for the read: EACCES as an operator sees it.
    require_root();
    let dir = TempDir::new().expect("tempdir");
    let path = dir.path().join("lifeline.toml");
    std::fs::write(&path, "dry_run = true\n").expect("write");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod 600");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(lifeline().expect("lifeline binary"))
        .args(["run", "--config"])
        .arg(&path)
        .output()
        .expect("run setpriv");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(EX_CONFIG), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot read it") && stderr.contains("Permission denied"),
        "{stderr}"
    );
}

/// The file is really used (the agent refuses its bad --comm, which only the file gave),
/// and a flag overrides the file (the same file with --comm on the command line passes
/// the config and fails later, on the impossible cgroup path the flag gives).
#[test]
fn file_values_apply_and_flags_override() {
    let text = "comm = [\"a-name-that-is-far-too-long\"]\n";
    let (code, stderr) = run_with(Some(text), &["run"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("invalid --comm"), "{stderr}");
    let (code, stderr) = run_with(
        Some(text),
        &["run", "--comm", "kubelet", "--cgroup", "ll/../cgroup"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        !stderr.contains("invalid --comm") && stderr.contains("invalid --cgroup ll/../cgroup"),
        "{stderr}"
    );
}
