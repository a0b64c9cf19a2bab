//! The restarted-kubelet row's unit (issue 23): `kubelet.service` of a `systemd --user`
//! manager of its own runs the scenario's kube-client, started before the agent, restarted
//! (systemd re-creates its cgroup) once the agent is ready; the trial is the restarted client.

use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::assertions::watched::{assert_watched_from_start, wait_watched};
use lifeline_tests::fixtures::kubelet_unit;
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::{Agent, ApiLab, mono_ms, wait_until};

use crate::measure::{Slot, Source};

/// A systemd manager running `kubelet.service` as the scenario's kube-client, connected.
pub(crate) fn start_unit(lab: &ApiLab, args: &[String]) -> Result<UserManager> {
    let m = UserManager::start()?;
    let command: Vec<&str> = args.iter().map(String::as_str).collect();
    kubelet_unit::install_kube_client(&m, lab, &command)?;
    kubelet_unit::start_installed(&m)?;
    wait_until(
        "kubelet.service's client to connect",
        Duration::from_secs(15),
        Duration::from_millis(100),
        || {
            let events = kubelet_unit::events(&m);
            Ok(events.iter().any(|e| e.event == "connected").then_some(()))
        },
    )?;
    Ok(m)
}

/// `systemctl --user restart kubelet.service` (systemd deletes the unit's cgroup and makes a
/// new one); the trial is the restarted client.
pub(crate) fn restart_unit(m: UserManager) -> Result<Slot> {
    let since_ms = mono_ms();
    m.systemctl(&["restart", kubelet_unit::UNIT])?;
    Ok(Slot::of(Source::Unit {
        manager: Box::new(m),
        since_ms,
    }))
}

/// Whether the restarted client's connection is watched from its first SYN by the agent
/// (as a note: a trial that is not still measures what it measures).
pub(crate) fn restarted_watched(a: &Agent, m: &UserManager, slot: &Slot) -> String {
    let checked = slot
        .connections()
        .first()
        .context("no connection")
        .and_then(|c| wait_watched(a, c.local_port, Duration::from_secs(10)))
        .and_then(|sock| assert_watched_from_start(&sock, kubelet_unit::main_pid(m)?));
    match checked {
        Ok(()) => "restarted kubelet watched from its SYN x1".into(),
        Err(e) => {
            eprintln!("lab-bench: the restarted kubelet's connection: {e:#}");
            "restarted kubelet NOT watched from its SYN x1".into()
        }
    }
}
