//! Scenario (e): `lifeline check` passes on this machine (every row exercised for
//! real: attach, iterator, `SOCK_DESTROY`, the unit over D-Bus) and fails with the right row,
//! and a non-zero exit, when the target cgroup or the restart unit does not exist. On a
//! kernel without some feature (`lifeline_common::features`) the rows about it warn and
//! name the Linux release that has it.

use std::process::Command;

use anyhow::Result;
use lifeline_tests::infra::kernel::{self, Feature, features};
use lifeline_tests::infra::paths::lifeline;
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::{Cgroup, NetNs, require_root};

/// (exit code, stdout, stderr) of `lifeline check ARGS` in a fresh network namespace.
fn check(ns: &NetNs, args: &[&str]) -> Result<(Option<i32>, String, String)> {
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", ns.path()))
        .arg("--")
        .arg(lifeline()?)
        .arg("check")
        .args(args);
    let out = lifeline_tests::infra::cmd::output(&mut cmd)?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Ok((out.status.code(), text(&out.stdout), text(&out.stderr)))
}

/// The result column of the row named `name`.
fn row<'a>(table: &'a str, name: &str) -> Option<&'a str> {
    table
        .lines()
        .find_map(|l| l.strip_prefix(name)?.split_whitespace().next())
}

/// The whole line of the row named `name`.
fn line<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_default()
}

/// The row about `f` passes where the kernel has it, else warns naming the release that
/// has it; reported to the kernel matrix either way.
fn kernel_row(out: &str, name: &str, f: &Feature) {
    let l = line(out, name);
    if kernel::has(f) {
        assert_eq!(row(out, name), Some("pass"), "row {name}:\n{out}");
    } else {
        assert_eq!(row(out, name), Some("warn"), "row {name}:\n{out}");
        assert!(
            l.contains(&kernel::since(f)),
            "row {name} names no release:\n{out}"
        );
    }
    kernel::report(
        f,
        &format!(
            "check: `{}`",
            l.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
    );
}

#[test]
fn check_passes_here_and_names_the_failing_row() -> Result<()> {
    require_root();
    let ns = NetNs::new("x")?;
    let cg = Cgroup::new()?;
    let m = UserManager::start()?;
    m.install("kubelet.service", "[Service]\nExecStart=/bin/sleep 60\n")?;
    let cgroup = cg.path().to_string_lossy().into_owned();
    let bus = m.bus_address();
    let base = ["--cgroup", &cgroup, "--systemd-bus", &bus];

    let (code, out, err) = check(
        &ns,
        &[&base[..], &["--restart-unit", "kubelet.service"]].concat(),
    )?;
    eprintln!("{out}{err}");
    assert_eq!(code, Some(0), "{out}{err}");
    for name in [
        "btf",
        "privileges",
        "seccomp",
        "cgroup2",
        "target cgroup",
        "sock_ops attach",
        "sock_ops watch",
        "SOCK_DESTROY",
        "systemd unit",
        "resolver",
        "name lookup",
    ] {
        assert_eq!(row(&out, name), Some("pass"), "row {name}:\n{out}");
    }
    assert!(out.contains("owner got ECONNABORTED"), "{out}");
    assert!(out.contains("kubelet.service: loaded, inactive"), "{out}");
    let lacks = features::ALL.iter().any(|f| !kernel::has(f));
    assert_eq!(
        row(&out, "kernel"),
        Some(if lacks { "warn" } else { "pass" }),
        "{out}"
    );
    kernel_row(&out, "cgroup tracepoints", &features::CGROUP_TRACEPOINTS);
    kernel_row(&out, "unanswered probes", &features::KEEPALIVE_NEWS);
    kernel_row(&out, "bpf_setsockopt", &features::ITER_CALLBACKS);
    kernel_row(&out, "keepalive", &features::KEEPALIVE_READ);
    kernel_row(&out, "stall evidence", &features::LINEAR_TIMEOUTS);
    kernel_row(&out, "silence evidence", &features::FAST_PROBES);
    // What a stop puts back, and what a dry run or a hold can defer.
    kernel_row(&out, "restore on stop", &features::RESTORE);
    // Go's after-connect keepalive merged by the setsockopt hook: on every kernel here,
    // with the namespace check from 5.15.
    kernel_row(&out, "app keepalive", &features::APP_KEEPALIVE_NETNS);
    assert!(
        line(&out, "app keepalive").contains("the socket has 1s,1s,20"),
        "{out}"
    );
    if !kernel::has(&features::KEEPALIVE_READ) {
        assert!(
            line(&out, "keepalive").contains("set without reading"),
            "{out}"
        );
    }

    // A target that does not exist yet is a state `run` handles (it waits), not a failure.
    let missing = format!("{cgroup}-missing");
    let (code, out, err) = check(&ns, &["--cgroup", &missing])?;
    eprintln!("{out}{err}");
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(row(&out, "target cgroup"), Some("warn"), "{out}");
    assert!(
        out.contains(&format!("{missing} does not exist yet")),
        "{out}"
    );
    assert_eq!(row(&out, "sock_ops attach"), Some("pass"), "{out}");

    let (code, out, _) = check(
        &ns,
        &[&base[..], &["--restart-unit", "nosuch-ll.service"]].concat(),
    )?;
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(row(&out, "systemd unit"), Some("fail"), "{out}");
    assert!(out.contains("nosuch-ll.service: not-found"), "{out}");
    Ok(())
}
