//! `lifeline check`: preflight on this node, with the flags (and config) `run` would use.
//! Every row really exercises what the daemon needs: the probe is loaded, attached to the
//! cgroup v2 root (with the cgroup tracepoints), calibrated to this network namespace and
//! detached; a loopback connection the check makes itself is armed
//! through the TCP iterator (`bpf_setsockopt`) and destroyed with `SOCK_DESTROY`.
//! A `fail` row means the daemon cannot work; a `warn` row means it works with less.

mod destroy;
mod endpoint;
mod host;
mod interrupt;
mod probe;
mod row;
mod running;
mod silence;
mod stall;
mod watch;

use std::fmt::Write as _;

use anyhow::{Result, bail};
use lifeline_common::features;
use row::{Level, Row};

use crate::{
    endpoint::setup::{self, Configured},
    kernel::errors,
    node::mounts,
    settings::{Run, Targets, run::Watch},
    watch::cgroup,
};

/// # Errors
/// When any row fails (the table is printed first).
pub(crate) fn run(args: &Run, signals: &std::io::Result<()>) -> Result<()> {
    let mut rows = vec![kernel(), btf(), privileges(), host::seccomp()];
    rows.push(match crate::node::signals::describe(signals) {
        Ok(text) => Row::pass("signals", text),
        Err(why) => Row::warn("signals", why),
    });
    if let Some(path) = crate::settings::config::source(args.config.as_deref()) {
        rows.push(Row::pass("config", path.display().to_string()));
    }
    rows.push(endpoint_row(&args.endpoint));
    rows.extend(crate::check::endpoint::rows(&args.endpoint));
    // Mount what `run` would mount, in a mount namespace of the check's own (gone when it
    // exits): the rows then say what `run` will manage, and the probe rows see what the
    // daemon will (the cgroup tracepoints need tracefs).
    let private = mounts::private_namespace();
    let target = targets(&args.watch, &mut rows);
    rows.push(host::mount_row(
        "bpffs",
        "bpf",
        "/sys/fs/bpf",
        private.as_ref(),
    ));
    rows.push(host::mount_row(
        "tracefs",
        "tracefs",
        "/sys/kernel/tracing",
        private.as_ref(),
    ));
    let linear = args.judge.stall_unanswered > 0;
    rows.extend(probe::probe_rows(&args.watch, linear, target.as_ref()));
    if let Some(unit) = &args.node.restart_unit {
        rows.push(probe::dbus_row(&args.node.systemd_bus, unit));
    }
    rows.push(running::capacity_row(&args.report.status_socket));
    rows.push(resolver());
    rows.push(
        match crate::endpoint::lookup_order(&args.endpoint.hosts_file) {
            Ok(order) => Row::pass("name lookup", order),
            Err(e) => Row::fail("name lookup", e),
        },
    );
    print!("{}", render(&rows));
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| r.result == Level::Fail)
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

/// The release against `lifeline_common::features`: what this kernel lacks, and since when.
fn kernel() -> Row {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let version = features::parse_release(&release).unwrap_or((0, 0));
    let lacks: Vec<_> = features::ALL
        .iter()
        .filter(|f| !f.in_kernel(version))
        .collect();
    let label = |f: &&features::Feature| format!("{} (Linux {}.{})", f.id, f.since.0, f.since.1);
    if let Some(f) = lacks.iter().find(|f| f.required) {
        Row::fail(
            "kernel",
            format!("{release}: lacks {}: {}", label(f), f.without),
        )
    } else if lacks.is_empty() {
        Row::pass("kernel", release)
    } else {
        let names: Vec<String> = lacks.iter().map(label).collect();
        Row::warn(
            "kernel",
            format!(
                "{release}: lacks {}; lifeline runs with less (rows below, docs/KERNELS.md)",
                names.join(", ")
            ),
        )
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

/// The cgroup2 mount (where the probe attaches) and each target, resolved as `run` does.
/// A target cgroup that does not exist yet is a warning: `run` waits for it.
fn targets(watch: &Watch, rows: &mut Vec<Row>) -> Option<(std::fs::File, Targets)> {
    let cgroup2 = match cgroup::cgroup2_mount() {
        Ok(m) => m,
        Err(e) => {
            rows.push(Row::fail("cgroup2", format!("{e:#}")));
            return None;
        }
    };
    let mount = cgroup2.mount;
    let root = match cgroup::open(&mount) {
        Ok(f) => f,
        Err(e) => {
            rows.push(Row::fail("cgroup2", format!("{e:#}")));
            return None;
        }
    };
    rows.push(Row::pass(
        "cgroup2",
        if cgroup2.mounted_privately {
            format!(
                "{} (none was visible: `run` mounts it in a mount namespace of its own, as this check did)",
                mount.display()
            )
        } else {
            mount.display().to_string()
        },
    ));
    let targets = match Targets::new(watch, &mount, std::path::Path::new("/")) {
        Ok(t) => t,
        Err(e) => {
            rows.push(Row::fail("targets", format!("{e:#}")));
            return None;
        }
    };
    for t in &targets.cgroups {
        rows.push(match std::fs::metadata(&t.dir) {
            Ok(m) if m.is_dir() => Row::pass(
                "target cgroup",
                format!(
                    "{} (id {})",
                    t.dir.display(),
                    std::os::unix::fs::MetadataExt::ino(&m)
                ),
            ),
            _ => Row::warn(
                "target cgroup",
                format!(
                    "{} does not exist yet: `run` waits for it and watches it from its creation",
                    t.dir.display()
                ),
            ),
        });
    }
    for c in &targets.comms {
        rows.push(Row::pass("target comm", c.clone()));
    }
    if targets.endpoint_clients {
        rows.push(Row::pass(
            "target endpoint",
            "every client of the API endpoint's addresses".to_owned(),
        ));
    }
    Some((root, targets))
}

/// The endpoint `run` would follow, and the file it would read it from.
fn endpoint_row(args: &crate::settings::run::Endpoint) -> Row {
    match setup::configured(args) {
        Ok(Configured::Endpoints {
            list,
            source,
            via: None,
        }) => Row::pass(
            "endpoint",
            format!("{} from {source}", crate::endpoint::names(&list)),
        ),
        Ok(Configured::Endpoints {
            source,
            via: Some(via),
            ..
        }) => match via.found {
            Ok(p) if via.refused.is_empty() => Row::pass(
                "endpoint",
                format!(
                    "{p} (kubeconfig from {source}); watched for it: the proxy's sockets to these upstreams (endpoint rules), kubelet's loopback socket by stall and silence only"
                ),
            ),
            Ok(p) => Row::warn(
                "endpoint",
                format!(
                    "{p} (kubeconfig from {source}); and {}",
                    via.refused.join("; ")
                ),
            ),
            Err(why) => Row::warn(
                "endpoint",
                format!(
                    "kubelet -> {} from {source}: no local proxy identified: {why}; give the API servers behind it with --endpoint",
                    crate::endpoint::names(std::slice::from_ref(&via.server))
                ),
            ),
        },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The table the lab tests and operators read: a row's level takes the same six
    /// columns a plain word did.
    #[test]
    fn the_table_pads_each_level_like_a_word() {
        let rows = [
            Row::pass("kernel", "6.18.0".into()),
            Row::warn("btf", "missing".into()),
            Row::fail("privileges", "no CAP_BPF".into()),
        ];
        assert_eq!(
            render(&rows),
            "CHECK              RESULT DETAIL\n\
             kernel             pass   6.18.0\n\
             btf                warn   missing\n\
             privileges         fail   no CAP_BPF\n"
        );
    }
}
