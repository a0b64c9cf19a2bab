//! The rows of `lifeline check` that act: load and attach the probe to the cgroup v2 root
//! (then detach it), arm a loopback connection through the TCP iterator (`bpf_setsockopt`),
//! destroy it with `SOCK_DESTROY` and see the owner get `ECONNABORTED`, ask systemd about
//! the restart unit. The connection is the check's own, on 127.0.0.1.

use std::fs::File;

use lifeline_common::hooks::Hook;

use super::{
    destroy::{destroy_row, loopback_pair},
    row::Row,
};
use crate::{
    act::restart::dbus,
    kernel::probe::{Probe, ProbeConfig},
    settings::{SystemdBus, Targets, run::Watch},
};

/// `sock_ops` attach, the cgroup tracepoints, keepalive news, `bpf_setsockopt` through the
/// iterator, `SOCK_DESTROY`.
pub(super) fn probe_rows(args: &Watch, linear: bool, target: Option<&(File, Targets)>) -> Vec<Row> {
    let mut rows = Vec::new();
    let conn = loopback_pair();
    let probe = match target {
        None => {
            rows.push(Row::fail(
                "sock_ops attach",
                "no cgroup v2 root to attach to".to_owned(),
            ));
            None
        }
        Some((root, targets)) => {
            let cfg = ProbeConfig {
                root,
                ports: &args.ports,
                targets,
                max_sockets: args.max_sockets,
                keepalive: args.keepalive_map(),
                silent_probes: args.silent_probes,
                linear_timeouts: linear,
                fast_probes: args.fast_probes,
                dry_run: false,
                recover: false,
            };
            match Probe::load(&cfg).and_then(|mut p| {
                let port = args.ports.first().copied().unwrap_or(6443);
                crate::watch::netns::calibrate(&mut p, port).map(|_| p)
            }) {
                Ok(p) => {
                    rows.push(Row::pass(
                        "sock_ops attach",
                        "loaded, attached to the cgroup v2 root, calibrated to this network namespace, detached".to_owned(),
                    ));
                    rows.push(if p.tracks_cgroups {
                        Row::pass(
                            "cgroup tracepoints",
                            "a re-created target cgroup is watched before its first process runs".to_owned(),
                        )
                    } else {
                        Row::warn(
                            "cgroup tracepoints",
                            format!(
                                "unavailable ({}): target cgroups are re-checked every sweep, a restarted unit's first connection may be adopted late",
                                p.tracking_error.as_deref().unwrap_or("unknown")
                            ),
                        )
                    });
                    rows.push(keepalive_news_row(&p));
                    let mut p = p;
                    rows.push(crate::check::silence::row(&mut p));
                    Some(p)
                }
                Err(e) => {
                    rows.push(Row::fail("sock_ops attach", format!("{e:#}")));
                    None
                }
            }
        }
    };
    let mut probe = probe;
    rows.push(match (&conn, probe.as_mut()) {
        (_, None) => Row::fail("bpf_setsockopt", "the probe did not load".to_owned()),
        (Err(e), _) => Row::fail("bpf_setsockopt", format!("{e:#}")),
        (Ok(_), Some(p)) if !p.can_adopt => crate::check::watch::iterator_row(None),
        (Ok((_, _, cookie)), Some(p)) => crate::check::watch::iterator_row(Some(
            p.adopt(&[*cookie]).map(|r| r.get(cookie).copied()),
        )),
    });
    if let Some(p) = probe.as_ref() {
        rows.push(restore_row(p));
    }
    if let Some(p) = probe.as_mut() {
        let want = args.keepalive_map();
        rows.extend(crate::check::watch::new_connection_rows(p, &want));
    }
    drop(probe); // detaches every program
    rows.push(match conn {
        Ok((client, server, cookie)) => destroy_row(&client, &server, cookie),
        Err(e) => Row::fail("SOCK_DESTROY", format!("{e:#}")),
    });
    rows
}

/// Whether the kernel reports unanswered keepalive probes (`Hook::Unanswered`'s feature).
fn keepalive_news_row(p: &Probe) -> Row {
    let since = Hook::Unanswered.since();
    match (p.unanswered_news, &p.unanswered_hook) {
        (true, Ok(hook)) => Row::pass(
            "unanswered probes",
            format!(
                "{} attached: the kernel reports unanswered keepalive probes of watched sockets",
                hook.attach()
            ),
        ),
        (_, hook) => Row::warn(
            "unanswered probes",
            format!(
                "unavailable ({}; needs Linux {}.{} and BTF): idle sockets are looked at through sock_diag on a schedule",
                hook.as_ref().err().map_or("unknown", String::as_str),
                since.0,
                since.1
            ),
        ),
    }
}

/// Whether a clean stop puts the application's socket options back, and a dry run or a hold
/// can defer the kernel's own keepalive aborts (`features::RESTORE`, `features::DEFER`).
fn restore_row(p: &Probe) -> Row {
    let since = lifeline_common::features::RESTORE.since;
    if p.can_adopt {
        Row::pass(
            "restore on stop",
            "the TCP iterator puts the application's socket options back at a clean stop and defers keepalive aborts while lifeline only observes".to_owned(),
        )
    } else {
        Row::warn(
            "restore on stop",
            format!(
                "not possible (needs Linux {}.{}: the TCP iterator): SO_KEEPALIVE, keepalive timing and callback flags stay on the sockets lifeline armed after it stops; a hold cannot defer the kernel's keepalive abort; --dry-run arms no keepalive",
                since.0, since.1
            ),
        )
    }
}

/// D-Bus reachable, and the unit known to its manager.
pub(super) fn dbus_row(bus: &SystemdBus, unit: &str) -> Row {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return Row::fail("systemd unit", format!("starting the runtime: {e}")),
    };
    let state = rt.block_on(async {
        let conn = dbus::connect(bus).await?;
        dbus::unit_state(&conn, unit).await
    });
    match state {
        Ok((load, active)) if load == "loaded" => {
            Row::pass("systemd unit", format!("{unit}: {load}, {active}"))
        }
        Ok((load, _)) => Row::fail(
            "systemd unit",
            format!("{unit}: {load}; --restart-unit must name a unit systemd knows"),
        ),
        Err(e) => Row::fail("systemd unit", format!("{unit}: {e:#}")),
    }
}
