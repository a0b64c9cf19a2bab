//! systemd's notify protocol (Type=notify): READY=1 once the probe is attached, STATUS=
//! after every sweep, WATCHDOG=1 while sweeps keep coming, STOPPING=1 on the way out.
//! Outside systemd (no `NOTIFY_SOCKET`) every call is a no-op.

use std::time::{Duration, Instant};

use sd_notify::NotifyState;
use tokio::sync::watch;

use crate::{judge::Verdict, report::status::Snapshot};

/// Whether systemd is listening: `NOTIFY_SOCKET` is set for Type=notify services.
fn enabled() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

fn send(states: &[NotifyState<'_>]) {
    // sd_notify is a no-op without NOTIFY_SOCKET.
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "cannot notify systemd");
    }
}

/// The probe is attached and the first sweep may start.
pub(crate) fn ready(snapshot: &Snapshot) {
    send(&[
        NotifyState::Ready,
        NotifyState::Status(&status_line(snapshot)),
    ]);
}

/// SIGTERM or SIGINT arrived: detaching.
pub(crate) fn stopping() {
    send(&[
        NotifyState::Stopping,
        NotifyState::Status("stopping: detaching the probe"),
    ]);
}

/// The one-line STATUS= that `systemctl status` shows.
#[must_use]
pub(crate) fn status_line(s: &Snapshot) -> String {
    let count = |v: Verdict| s.verdicts.get(v.label()).copied().unwrap_or(0);
    let stalled = count(Verdict::Stalled);
    let suspect = count(Verdict::Suspect);
    let waiting: Vec<&str> = s
        .targets
        .iter()
        .filter(|t| t.state == "waiting")
        .map(|t| t.target.as_str())
        .collect();
    let waiting = if waiting.is_empty() {
        String::new()
    } else {
        format!("; waiting for {}", waiting.join(", "))
    };
    format!(
        "watching {} sockets: {stalled} stalled, {suspect} suspect; {} killed{waiting}",
        s.watched, s.kills
    )
}

/// Follow the daemon's snapshots: a new STATUS= when the line changes, and a watchdog
/// ping per snapshot, so the pings stop when the sweeps stop (a hung loop gets restarted).
pub(crate) fn spawn(
    mut rx: watch::Receiver<Snapshot>,
    sweep_interval: Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    if !enabled() {
        return None;
    }
    let watchdog = sd_notify::watchdog_enabled();
    if let Some(period) = watchdog.filter(|p| *p < sweep_interval * 3) {
        tracing::warn!(
            watchdog_ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX),
            "WatchdogSec is less than three sweep intervals: systemd may kill a healthy lifeline"
        );
    }
    Some(tokio::spawn(async move {
        let mut last = String::new();
        let mut last_ping = Instant::now();
        while rx.changed().await.is_ok() {
            let line = status_line(&rx.borrow_and_update());
            if line != last {
                send(&[NotifyState::Status(&line)]);
                last = line;
            }
            // Throttled to a quarter period: the sweeps may come faster than needed.
            if watchdog.is_some_and(|p| last_ping.elapsed() >= p / 4) {
                send(&[NotifyState::Watchdog]);
                last_ping = Instant::now();
            }
        }
    }))
}
