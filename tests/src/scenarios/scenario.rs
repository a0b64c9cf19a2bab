//! The black-hole check that scenarios (a) and (d) both make, and the standard setup.

use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::assertions::decision::Decision;
use crate::assertions::status::StatusSocket;
use crate::fixtures::agent::Agent;
use crate::fixtures::client::{Client, ClientEvent};
use crate::infra::util::{mono_ms, wait_until};
pub use crate::scenarios::setup::Setup;

/// `ECONNABORTED`: what `SOCK_DESTROY` makes the owner's next read or write return.
pub const ECONNABORTED: i32 = 103;

/// What happened between the black hole and the kill.
#[derive(Debug)]
pub struct KillReport {
    pub fault_ms: u64,
    pub decision: Decision,
    pub client_error: ClientEvent,
    /// Every status observation of the socket after the fault: (ms after fault, socket).
    pub seen: Vec<(u64, StatusSocket)>,
}

/// Black-holes the server's address and asserts the whole story an operator expects:
/// `status` shows trouble with evidence, the agent kills within stall-timeout + 3 s, the
/// client's pending read fails with ECONNABORTED, and ss no longer lists the socket.
///
/// # Errors
/// When any of these does not happen.
pub fn blackhole_until_killed(
    s: &Setup,
    agent: &Agent,
    client: &Client,
    stall: Duration,
) -> Result<KillReport> {
    let port = client
        .local_port()
        .context("client never reported its local port")?;
    client.wait_event("a first good heartbeat", Duration::from_secs(10), |e| {
        e.event == "ok"
    })?;
    // The socket is watched before anything goes wrong (by sock_ops or adopted at start).
    wait_until(
        "the socket in lifeline status",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            Ok(agent
                .status()
                .ok()
                .and_then(|st| st.socket_for_port(port).cloned()))
        },
    )?;

    let peer = client.peer().context("client never reported its peer")?;
    let fault = s.lab.blackhole(peer.ip())?;
    let fault_ms = mono_ms();
    let budget = stall + Duration::from_secs(3);
    let (decision, seen) = watch_until_decision(s, agent, port, fault_ms, budget)?;
    check_decision(&decision, fault_ms, budget, client)?;

    let client_error = client.wait_event("the client's error", Duration::from_secs(5), |e| {
        e.event == "error"
    })?;
    ensure!(
        client_error.errno == Some(ECONNABORTED),
        "client error is not ECONNABORTED: {}",
        client_error.raw
    );
    ensure!(
        crate::assertions::ss::find(&s.lab.client, port, peer)?.is_none(),
        "socket still ESTABLISHED:\n{}",
        crate::assertions::ss::dump(&s.lab.client)
    );

    check_status_evidence(&seen)?;
    let (_, dropped) = s.lab.counters(&fault)?;
    ensure!(
        dropped > 0,
        "the black hole dropped nothing:\n{}",
        s.lab.nft_ruleset()
    );
    Ok(KillReport {
        fault_ms,
        decision,
        client_error,
        seen,
    })
}

/// Polls `status` every ~100 ms (recording the socket) until a decision about `port` appears.
/// Waits 10 s past the budget so a late kill is reported with its numbers, not as "never".
fn watch_until_decision(
    s: &Setup,
    agent: &Agent,
    port: u16,
    fault_ms: u64,
    budget: Duration,
) -> Result<(Decision, Vec<(u64, StatusSocket)>)> {
    let mut seen = Vec::new();
    // The agent confirms a stall at most 100 ms after first seeing it (`CONFIRM_AFTER`), so a
    // poll every 100 ms may miss the "stalled" row itself: the check below asks for the
    // trouble and its evidence, which show for the whole episode.
    let every = Duration::from_millis(100);
    let decision = wait_until(
        "a kill decision",
        budget + Duration::from_secs(10),
        every,
        || {
            if let Some(d) = agent
                .decisions()
                .into_iter()
                .find(|d| d.is_for_port(port) && d.action == "kill")
            {
                return Ok(Some(d));
            }
            if let Some(sock) = agent
                .status()
                .ok()
                .and_then(|st| st.socket_for_port(port).cloned())
            {
                seen.push((mono_ms() - fault_ms, sock));
            }
            Ok(None)
        },
    )
    .map_err(|e| {
        let (log, ss) = (
            agent.proc.stderr_text(),
            crate::assertions::ss::dump(&s.lab.client),
        );
        anyhow::anyhow!("{e:#}\nlifeline's stderr:\n{log}\nss:\n{ss}")
    })?;
    Ok((decision, seen))
}

/// The decision is the right one, in time, about the client's socket.
fn check_decision(
    decision: &Decision,
    fault_ms: u64,
    budget: Duration,
    client: &Client,
) -> Result<()> {
    let after = decision.at_ms.saturating_sub(fault_ms);
    eprintln!("decision {after} ms after the black hole: {}", decision.raw);
    let raw = &decision.raw;
    ensure!(
        decision.verdict == "stalled",
        "verdict {:?} in {raw}",
        decision.verdict
    );
    ensure!(
        decision.action == "kill",
        "action {:?} in {raw}",
        decision.action
    );
    ensure!(
        decision.outcome == "killed",
        "outcome {:?} in {raw}",
        decision.outcome
    );
    ensure!(
        u128::from(after) <= budget.as_millis(),
        "killed {after} ms after the fault; budget {budget:?}"
    );
    // A stall's evidence: data outstanding (the kernel's segment count; a polled socket's
    // record holds no byte count), retransmitted without an answer.
    let segs = raw
        .pointer("/fields/unacked_segs")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    ensure!(
        segs > 0 && decision.unanswered_rtos.unwrap_or(0) > 0,
        "a stall without its evidence (unacked segments, RTOs in a row): {raw}"
    );
    if let Some(pid) = decision.owner_pid {
        let client_pid = client.proc.pid();
        ensure!(
            u64::from(client_pid) == pid,
            "owner_pid {pid} is not the client ({client_pid})"
        );
    }
    Ok(())
}

/// Before the kill, `lifeline status` showed the socket in trouble, with evidence.
fn check_status_evidence(seen: &[(u64, StatusSocket)]) -> Result<()> {
    for (ms, sock) in seen {
        eprintln!(
            "  status +{ms} ms: verdict={} trouble_age_ms={:?} unacked_segs={} unacked_bytes={} retransmits={}",
            sock.verdict,
            sock.trouble_age_ms,
            sock.unacked_segs,
            sock.unacked_bytes,
            sock.retransmits
        );
    }
    // The trouble and its evidence must show before the kill. "stalled" itself lasts from
    // the first dead look to the confirming one, which every RTO being news brings at the
    // next RTO (200-400 ms with linear timeouts): a status poll that spawns a process each
    // time may fall between them, so "suspect" with evidence counts too (the decision's own
    // evidence is `check_decision`'s).
    ensure!(
        seen.iter()
            .any(|(_, sock)| sock.shows_trouble_with_evidence()),
        "lifeline status never showed the socket in trouble with evidence before the kill"
    );
    if !seen.iter().any(|(_, sock)| sock.verdict == "stalled") {
        eprintln!("  (the stalled window fell between two status polls)");
    }
    Ok(())
}
