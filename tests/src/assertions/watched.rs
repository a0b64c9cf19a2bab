//! The checks every watch-model scenario makes: a socket is watched (listed by the agent,
//! with its owner and how it was found) before anything is asserted about kills, and a
//! black hole on it ends in a kill decision.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};

use crate::assertions::decision::Decision;
use crate::assertions::status::StatusSocket;
use crate::fixtures::agent::Agent;
use crate::infra::lab::Lab;
use crate::infra::util::wait_until;

/// Waits until `lifeline status` lists the socket whose local port is `port`.
///
/// # Errors
/// When it is not listed within `within`.
pub fn wait_watched(a: &Agent, port: u16, within: Duration) -> Result<StatusSocket> {
    wait_until(
        &format!("the socket from local port {port} in lifeline status"),
        within,
        Duration::from_millis(100),
        || {
            Ok(a.status()
                .ok()
                .and_then(|s| s.socket_for_port(port).cloned()))
        },
    )
}

/// Asserts the socket was recorded by `sock_ops` at its handshake (watched from its first
/// SYN, not found later by the `sock_diag` adoption) and belongs to `pid`.
///
/// # Errors
/// When either is not so.
pub fn assert_watched_from_start(s: &StatusSocket, pid: u64) -> Result<()> {
    ensure!(
        s.source == "sock_ops",
        "the socket was not watched from its start (source {:?}): {}",
        s.source,
        s.raw
    );
    ensure!(
        s.owner_pid == Some(pid),
        "the socket's owner is {:?}, not the unit's main process {pid}: {}",
        s.owner_pid,
        s.raw
    );
    Ok(())
}

/// Black-holes the flow from local port `port` and waits for the kill decision about it.
///
/// # Errors
/// When no kill decision comes within `within`, or it did not kill.
pub fn blackhole_is_killed(lab: &Lab, a: &Agent, port: u16, within: Duration) -> Result<Decision> {
    let _fault = lab.blackhole_flow(port)?;
    let d = kill_decision(a, port, within)?;
    ensure!(d.outcome == "killed", "not killed: {}", d.raw);
    Ok(d)
}

/// The kill decision about local port `port`, waited for up to `within`.
///
/// # Errors
/// When none comes in time (the error carries the agent's stderr).
pub fn kill_decision(a: &Agent, port: u16, within: Duration) -> Result<Decision> {
    wait_until(
        &format!("a kill decision for local port {port}"),
        within,
        Duration::from_millis(100),
        || {
            Ok(a.decisions()
                .into_iter()
                .find(|d| d.action == "kill" && d.is_for_port(port)))
        },
    )
    .with_context(|| format!("lifeline's stderr:\n{}", a.proc.stderr_text()))
}
