//! `lifeline check`: preflight on this node, with the flags (and config) `run` would use.
//! Every row really exercises what the daemon needs: the probe is loaded, attached to the
//! target cgroup and detached; a loopback connection the check makes itself is armed
//! through the TCP iterator (`bpf_setsockopt`) and destroyed with `SOCK_DESTROY`.
//! A `fail` row means the daemon cannot work; a `warn` row means it works with less.

use std::{fmt::Write as _, path::PathBuf};

use anyhow::{Result, bail};

use crate::{
    cgroup,
    check_probe::{self, Row},
    cli::RunArgs,
    endpoint::setup::{self, Configured},
    errors, mounts,
};

/// Oldest kernel with every `sock_ops` callback the probe arms (RTT is 5.3).
const MIN_KERNEL: (u32, u32) = (5, 3);
/// The TCP iterator may call `bpf_setsockopt` from 6.12 on.
const ITER_KERNEL: (u32, u32) = (6, 12);

/// # Errors
/// When any row fails (the table is printed first).
pub fn run(args: &RunArgs) -> Result<()> {
    let mut rows = vec![kernel(), btf(), privileges()];
    if let Some(path) = crate::config::source(args) {
        rows.push(Row::pass("config", path.display().to_string()));
    }
    rows.push(endpoint_row(args));
    let target = target_cgroup(args, &mut rows);
    rows.push(mounted("bpffs", "bpf", "/sys/fs/bpf"));
    rows.push(mounted("tracefs", "tracefs", "/sys/kernel/tracing"));
    rows.extend(check_probe::probe_rows(args, target.as_ref()));
    if let Some(unit) = &args.node.restart_unit {
        rows.push(check_probe::dbus_row(&args.node.systemd_bus, unit));
    }
    rows.push(resolver());
    print!("{}", render(&rows));
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| r.result == "fail")
        .map(|r| r.name)
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    bail!("check failed: {}", failed.join(", "))
}

fn render(rows: &[Row]) -> String {
    let mut out = format!("{:<18} {:<6} {}\n", "CHECK", "RESULT", "DETAIL");
    for r in rows {
        let _ = writeln!(out, "{:<18} {:<6} {}", r.name, r.result, r.detail);
    }
    out
}

fn kernel() -> Row {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if version < MIN_KERNEL {
        Row::fail(
            "kernel",
            format!(
                "{release}: the sock_ops callbacks need Linux {}.{} or later",
                MIN_KERNEL.0, MIN_KERNEL.1
            ),
        )
    } else if version < ITER_KERNEL {
        Row::warn(
            "kernel",
            format!("{release}: sockets older than the agent are polled (arming them needs 6.12)"),
        )
    } else {
        Row::pass("kernel", release)
    }
}

fn btf() -> Row {
    const BTF: &str = "/sys/kernel/btf/vmlinux";
    if std::fs::metadata(BTF).is_ok() {
        Row::pass("btf", BTF.to_owned())
    } else {
        Row::warn(
            "btf",
            format!("{BTF} missing: the TCP iterator cannot load; older sockets are polled"),
        )
    }
}

fn privileges() -> Row {
    match errors::check_privileges() {
        Ok(()) => Row::pass(
            "privileges",
            "CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN (or root)".to_owned(),
        ),
        Err(e) => Row::fail("privileges", format!("{e:#}")),
    }
}

/// The cgroup2 mount and the target cgroup, resolved as `run` does.
fn target_cgroup(args: &RunArgs, rows: &mut Vec<Row>) -> Option<(PathBuf, std::fs::File)> {
    let mount = match cgroup::cgroup2_mount() {
        Ok(m) => m,
        Err(e) => {
            rows.push(Row::fail("cgroup2", format!("{e:#}")));
            return None;
        }
    };
    rows.push(Row::pass("cgroup2", mount.display().to_string()));
    let path = match (&args.cgroup, args.comms.is_empty()) {
        (Some(p), _) => cgroup::resolve(&mount, p),
        (None, true) => cgroup::resolve(&mount, cgroup::DEFAULT_CGROUP.as_ref()),
        (None, false) => mount.clone(),
    };
    match cgroup::open(&path) {
        Ok(f) => {
            rows.push(Row::pass("target cgroup", path.display().to_string()));
            Some((path, f))
        }
        Err(e) => {
            rows.push(Row::fail("target cgroup", format!("{e:#}")));
            None
        }
    }
}

/// The endpoint `run` would follow, and the file it would read it from.
fn endpoint_row(args: &RunArgs) -> Row {
    match setup::configured(args) {
        Ok(Configured::Endpoints { list, source }) => Row::pass(
            "endpoint",
            format!("{} from {source}", setup::names(&list)),
        ),
        Ok(Configured::Nothing) => Row::warn(
            "endpoint",
            "none: no --endpoint or --kubeconfig, no kubelet running here, no well-known kubeconfig"
                .to_owned(),
        ),
        Ok(Configured::Unusable { source, problem }) => {
            Row::warn("endpoint", format!("{problem} (found as {source})"))
        }
        Err(e) => Row::fail("endpoint", format!("{e:#}")),
    }
}

fn mounted(name: &'static str, fstype: &str, at: &str) -> Row {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    match mounts::mount_point_of(&info, fstype) {
        Some(p) => Row::pass(name, format!("mounted at {}", p.display())),
        None => Row::pass(name, format!("not mounted; lifeline run mounts it at {at}")),
    }
}

fn resolver() -> Row {
    match std::fs::read_to_string("/etc/resolv.conf") {
        Ok(t) if t.lines().any(|l| l.trim_start().starts_with("nameserver")) => {
            Row::pass("resolver", "/etc/resolv.conf has nameservers".to_owned())
        }
        Ok(_) => Row::warn(
            "resolver",
            "/etc/resolv.conf lists no nameserver".to_owned(),
        ),
        Err(e) => Row::warn("resolver", format!("cannot read /etc/resolv.conf: {e}")),
    }
}
