//! Scenario (e): bad input gets one clear line and a non-zero exit, never a panic.
//! Each run happens in a fresh network namespace (nothing it might attach can touch the
//! host) and is bounded: an agent that starts running instead of failing is killed.

use std::process::Command;
use std::time::Duration;

use lifeline_tests::infra::mountinfo::cgroup2_mounts;
use lifeline_tests::infra::paths::lifeline;
use lifeline_tests::{NetNs, Proc, TempDir, require_root};

/// Exit code (None: killed or never exited) and stderr of `lifeline` run through `wrap`.
fn run(wrap: &[&str], args: &[&str]) -> (Option<i32>, String) {
    require_root();
    let ns = NetNs::new("b").expect("netns");
    let dir = TempDir::new().expect("tempdir");
    let sock = dir.path().join("status.sock");
    let bin = lifeline().expect("lifeline binary");
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", ns.path()))
        .arg("--")
        .args(wrap)
        .arg(&bin)
        .args(args);
    if args.first() == Some(&"run") {
        cmd.arg("--status-socket")
            .arg(&sock)
            .args(["--log", "stderr"]);
    }
    let mut p = Proc::spawn("lifeline", cmd).expect("spawn");
    let status = p.wait_timeout(Duration::from_secs(30));
    if status.is_none() {
        p.kill();
    }
    (status.and_then(|s| s.code()), p.stderr_text())
}

/// The contract for our own errors: exit 1, one line `lifeline: error: ...` naming the problem.
fn assert_clear_error((code, stderr): &(Option<i32>, String), names: &[&str]) {
    eprintln!("exit {code:?}, stderr: {stderr}");
    assert!(
        code.is_some_and(|c| c != 0),
        "exit code {code:?}; stderr: {stderr}"
    );
    assert_no_panic(stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "want exactly one line on stderr, got:\n{stderr}"
    );
    assert!(
        lines[0].starts_with("lifeline: error:"),
        "not `lifeline: error:`: {stderr}"
    );
    let lower = lines[0].to_lowercase();
    assert!(
        names.iter().any(|n| lower.contains(&n.to_lowercase())),
        "error names none of {names:?}: {stderr}"
    );
}

fn assert_no_panic(stderr: &str) {
    let lower = stderr.to_lowercase();
    assert!(
        !lower.contains("panicked") && !lower.contains("backtrace"),
        "panic: {stderr}"
    );
}

fn base(cgroup: &str, ports: &str) -> Vec<String> {
    [
        "run",
        "--cgroup",
        cgroup,
        "--ports",
        ports,
        "--stall-timeout",
        "4s",
    ]
    .map(String::from)
    .to_vec()
}

/// A cgroup that exists (the cgroup2 root), so only the input under test is wrong.
fn root_cgroup() -> String {
    let mount = cgroup2_mounts()
        .expect("mountinfo")
        .into_iter()
        .next()
        .expect("a cgroup2 mount");
    mount.to_str().expect("utf-8").to_owned()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A cgroup that does not exist yet is a state (the agent waits for it, see
/// `unit_lifecycle.rs`); a path no cgroup can ever have is bad input.
#[test]
fn impossible_cgroup_path() {
    let out = run(&[], &strs(&base("system.slice/../kubelet.service", "6443")));
    assert_clear_error(&out, &["invalid --cgroup"]);
    let long = "x".repeat(300);
    let out = run(&[], &strs(&base(&long, "6443")));
    assert_clear_error(&out, &["longer than 255 bytes"]);
}

/// A hosts file that exists but cannot be read (here a directory) would hide a name pinned
/// there: bad input at start. A missing one is an empty one.
#[test]
fn unreadable_hosts_file() {
    let mut args = base(&root_cgroup(), "6443");
    args.extend(["--hosts-file", "/"].map(String::from));
    let out = run(&[], &strs(&args));
    assert_clear_error(
        &out,
        &["invalid --hosts-file: cannot read the hosts file /: "],
    );
}

/// A bad port is a usage error: clap's exit code 2 with its usual text, or our one line.
fn assert_bad_port(value: &str) {
    let (code, stderr) = run(&[], &strs(&base(&root_cgroup(), value)));
    eprintln!("--ports {value}: exit {code:?}, stderr: {stderr}");
    if code == Some(2) {
        assert_no_panic(&stderr);
        assert!(
            stderr.contains(value),
            "clap error does not name {value:?}: {stderr}"
        );
    } else {
        assert_clear_error(&(code, stderr), &["port"]);
    }
}

#[test]
fn port_out_of_range() {
    assert_bad_port("70000");
}

#[test]
fn port_not_a_number() {
    assert_bad_port("abc");
}

/// Not root and no capabilities: it cannot load eBPF nor kill sockets, and must say so.
#[test]
fn missing_privileges() {
    let wrap = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--",
    ];
    let out = run(&wrap, &strs(&base(&root_cgroup(), "6443")));
    assert_clear_error(&out, &["permission", "CAP_", "privilege", "root"]);
}

/// No cgroup v2 hierarchy visible (a pure v1 host, or `ip netns exec`, which remounts /sys)
/// and no right to mount one (only the unit's three capabilities): it must name the missing
/// hierarchy and why it cannot mount it. (With `CAP_SYS_ADMIN` it mounts one privately and
/// runs: `ip_netns_exec.rs`.)
#[test]
fn no_cgroup2_mount() {
    let mounts = cgroup2_mounts().expect("mountinfo");
    let umounts: String = mounts.iter().fold(String::new(), |acc, m| {
        acc + &format!("umount -l '{}' && ", m.display())
    });
    let script = format!(
        "{umounts}exec setpriv --bounding-set=-all,+bpf,+perfmon,+net_admin --inh-caps=-all -- \"$0\" \"$@\""
    );
    let wrap = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        &script,
    ];
    // No --cgroup: the default (kubelet.service) must be looked up under a cgroup2 mount.
    let args = ["run", "--ports", "6443", "--stall-timeout", "4s"];
    let out = run(&wrap, &args);
    assert_clear_error(&out, &["cgroup2", "cgroup v2"]);
    assert!(out.1.contains("CAP_SYS_ADMIN"), "{}", out.1);
}
