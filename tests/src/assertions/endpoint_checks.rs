//! Checks the long endpoint scenarios share: status sampled over a window, "nothing
//! happened" (no kill, no client failure, no re-dial), the agent's holds, and that a
//! fault really dropped packets.

use std::time::Duration;

use anyhow::{Result, ensure};

use crate::assertions::decision::Decision;
use crate::fixtures::agent::Agent;
use crate::fixtures::client::Client;
use crate::infra::apilab::ApiLab;
use crate::infra::nft::Fault;
use crate::infra::util::mono_ms;

/// Polls status every 2 s for `window`: the socket's `endpoint_member` values seen
/// ("missing" when status failed or did not list the socket).
#[must_use]
pub fn watch_members(agent: &Agent, port: u16, window: Duration) -> Vec<String> {
    let (start, mut seen) = (mono_ms(), Vec::new());
    let rounds = window.as_secs() / 2 + 1;
    for _ in 0..rounds {
        if u128::from(mono_ms() - start) >= window.as_millis() {
            break;
        }
        let st = agent.status().ok();
        let m = st
            .as_ref()
            .and_then(|s| s.socket_for_port(port)?.endpoint_member.clone());
        seen.push(m.unwrap_or_else(|| "missing".into()));
        std::thread::sleep(Duration::from_secs(2));
    }
    seen
}

/// Nothing was killed, the client never failed and is still on its first connection.
///
/// # Errors
/// When any of these is not so.
pub fn untouched(agent: &Agent, c: &Client, port: u16) -> Result<()> {
    let kills: Vec<_> = agent
        .decisions()
        .into_iter()
        .filter(|d| d.action == "kill")
        .collect();
    ensure!(kills.is_empty(), "kills: {kills:?}");
    ensure!(c.errors().is_empty(), "client failed: {}", c.dump());
    ensure!(
        c.connections().len() == 1 && c.current().is_some_and(|n| n.local_port == port),
        "re-dialed: {}",
        c.dump()
    );
    Ok(())
}

/// The hold decisions about the client socket with local port `port`.
#[must_use]
pub fn holds_of(agent: &Agent, port: u16) -> Vec<Decision> {
    agent
        .decisions()
        .into_iter()
        .filter(|d| d.is_for_port(port) && d.action == "hold")
        .collect()
}

/// A lab fault really dropped packets (the scenario did what it claims).
///
/// # Errors
/// When it dropped nothing.
pub fn check_dropped(l: &ApiLab, fault: &Fault) -> Result<()> {
    let (_, dropped) = l.lab.counters(fault)?;
    ensure!(
        dropped > 0,
        "{} dropped nothing:\n{}",
        fault.description,
        l.lab.nft_ruleset()
    );
    Ok(())
}
