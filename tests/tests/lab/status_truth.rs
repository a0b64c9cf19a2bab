//! `lifeline status` says what the kernel says at the moment it is asked. Three 1 s heartbeat
//! connections from the watched cgroup, the agent in `--dry-run` (it decides and logs, and
//! kills nothing, so the rows can be watched through the whole fault):
//! - A's flow is black-holed, then healed: while it lasts its row shows trouble, unacked data
//!   and last-ACK ages growing, and stalled; once the kernel has recovered (the client's next
//!   reply) the row is healthy, without trouble, with a small LAST-ACK, at once;
//! - B is never touched: busy, it is healthy on every read and never `idle`;
//! - C's flow is black-holed and its client killed with SIGKILL: its socket lingers in FIN-WAIT-1 with
//!   nobody holding it, and its row says so, never `healthy`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::status::{Status, StatusSocket};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, AgentArgs, Client, mono_ms, require_root, wait_until};

const STALL: Duration = Duration::from_secs(4);
const EVERY: Duration = Duration::from_millis(250);

#[test]
fn status_rows_are_the_kernel_s_truth() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let args = AgentArgs {
        extra: vec!["--dry-run".into()],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let (healed_client, busy, mut dying) = (heartbeat(&s)?, heartbeat(&s)?, heartbeat(&s)?);
    let ports = [port(&healed_client)?, port(&busy)?, port(&dying)?];
    // Every socket is watched (by its cgroup) and busy before anything goes wrong.
    let first = wait_until(
        "all three sockets in status",
        Duration::from_secs(10),
        EVERY,
        || {
            let st = agent.status()?;
            Ok(ports.iter().all(|p| row(&st, *p).is_some()).then_some(st))
        },
    )?;
    for p in ports {
        let watched = row(&first, p).context("row")?;
        ensure!(
            watched.watched_by.iter().any(|w| w == "cgroup"),
            "{}",
            watched.raw
        );
        ensure!(
            watched.state.as_deref() == Some("ESTABLISHED"),
            "{}",
            watched.raw
        );
    }
    let dying_pid = u64::from(dying.proc.pid());
    ensure!(row(&first, ports[2]).and_then(|r| r.owner_pid) == Some(dying_pid));

    let holes = [
        s.lab.blackhole_flow(ports[0])?,
        s.lab.blackhole_flow(ports[2])?,
    ];
    let fault = Instant::now();
    let mut during = Vec::new();
    let mut killed = false;
    while fault.elapsed() < STALL + Duration::from_secs(2) {
        if !killed && fault.elapsed() >= Duration::from_secs(3) {
            dying.proc.kill();
            killed = true;
        }
        let st = agent.status()?;
        during.push((fault.elapsed(), killed, st));
        std::thread::sleep(EVERY);
    }
    let trouble: Vec<&StatusSocket> = during
        .iter()
        .filter_map(|(_, _, st)| row(st, ports[0]))
        .collect();
    check_growing(&trouble)?;
    s.lab.heal(&holes[0])?;
    let healed = mono_ms();
    let ok =
        healed_client.wait_event("A's reply after the heal", Duration::from_secs(20), |e| {
            e.event == "ok" && e.mono_ms > healed
        })?;
    eprintln!("A's first reply {} ms after the heal", ok.mono_ms - healed);
    // Rows are read at the request: the first read after the kernel recovered is already
    // true. (Generous: 2 s, reads every 250 ms.)
    let mut after = Vec::new();
    let recovered = wait_until("A healthy again", Duration::from_secs(2), EVERY, || {
        let st = agent.status()?;
        let now = row(&st, ports[0]).cloned();
        after.push(st);
        Ok(now.filter(|r| r.verdict == "healthy" && r.trouble_age_ms.is_none()))
    })?;
    ensure!(recovered.last_ack_age_ms < 2_000, "{}", recovered.raw);
    ensure!(recovered.retransmits == 0, "{}", recovered.raw);
    eprintln!("A after recovery: {}", recovered.raw);
    // It stays so: a busy connection is not `idle` and has no trouble.
    for _ in 0..8 {
        after.push(agent.status()?);
        std::thread::sleep(EVERY);
    }
    let reads = during
        .iter()
        .map(|(_, _, st)| st)
        .chain(&after)
        .collect::<Vec<_>>();
    check_busy(&reads, ports[1], "B")?;
    check_busy(
        &after[after.len() - 8..].iter().collect::<Vec<_>>(),
        ports[0],
        "A after recovery",
    )?;
    check_dead_owner(&during, ports[2])?;
    check_table(&agent, ports[2])?;
    ensure!(
        agent
            .decisions()
            .iter()
            .all(|d| d.action != "kill" || d.outcome == "dry-run")
    );
    Ok(())
}

fn heartbeat(s: &Setup) -> Result<Client> {
    let c = s.heartbeat_client(&[])?;
    c.wait_event("a first reply", Duration::from_secs(10), |e| {
        e.event == "ok"
    })?;
    Ok(c)
}

fn port(c: &Client) -> Result<u16> {
    c.local_port().context("the client's local port")
}

fn row(st: &Status, port: u16) -> Option<&StatusSocket> {
    st.socket_for_port(port)
}

/// A's rows during the black hole: trouble, unacked data and the last-ACK age all there and
/// growing by about the time that passed, and stalled once 8 transmissions in a row went
/// unanswered (or no ACK came for the stall timeout).
fn check_growing(rows: &[&StatusSocket]) -> Result<()> {
    for r in rows {
        eprintln!(
            "  A: {} trouble={:?} last_ack={} unacked={}/{}B retrans={}",
            r.verdict,
            r.trouble_age_ms,
            r.last_ack_age_ms,
            r.unacked_segs,
            r.unacked_bytes,
            r.retransmits
        );
    }
    let troubled: Vec<_> = rows.iter().filter(|r| r.trouble_age_ms.is_some()).collect();
    let (first, last) = (
        troubled.first().context("no row showed trouble")?,
        troubled.last().context("none")?,
    );
    ensure!(
        troubled
            .iter()
            .all(|r| r.unacked_segs > 0 && r.unacked_bytes > 0),
        "trouble without unacked data"
    );
    let grew = |f: fn(&StatusSocket) -> u64| f(last).saturating_sub(f(first));
    ensure!(
        grew(|r| r.trouble_age_ms.unwrap_or(0)) >= 2_000,
        "trouble age did not grow: {} .. {}",
        first.raw,
        last.raw
    );
    ensure!(
        grew(|r| r.last_ack_age_ms) >= 2_000,
        "last-ACK age did not grow: {} .. {}",
        first.raw,
        last.raw
    );
    let stalled = rows
        .iter()
        .find(|r| r.verdict == "stalled")
        .context("never shown stalled")?;
    // Stalled with its evidence: 8 RTOs in a row (the kernel's count, `rto_count`), or no
    // ACK for the whole stall timeout.
    let rtos = stalled.raw["rto_count"].as_u64().unwrap_or(0);
    ensure!(
        (rtos >= 8 || stalled.last_ack_age_ms >= 4_000) && stalled.shows_trouble_with_evidence(),
        "{}",
        stalled.raw
    );
    Ok(())
}

/// C in the table an operator reads.
fn check_table(agent: &Agent, port: u16) -> Result<()> {
    // The table an operator reads says the same of it (its flow is still black-holed, so it
    // lingers in FIN-WAIT-1 for about 100 s: `tcp_orphan_retries`).
    let table = agent.status_table()?;
    let line = table
        .lines()
        .find(|l| l.contains(&format!(":{port} ")))
        .with_context(|| format!("C missing from the table:\n{table}"))?;
    ensure!(
        line.starts_with("closing  FIN-WAIT-1") && line.contains("no owner"),
        "{table}"
    );
    Ok(())
}

/// A busy 1 s heartbeat is healthy on every read, with a recent last ACK; never `idle`.
fn check_busy(reads: &[&Status], port: u16, who: &str) -> Result<()> {
    ensure!(reads.len() >= 8, "{who}: only {} reads", reads.len());
    for st in reads {
        let r = row(st, port).with_context(|| format!("{who} missing from status"))?;
        ensure!(
            r.verdict == "healthy" && r.last_ack_age_ms < 2_500 && r.trouble_age_ms.is_none(),
            "{who}: {}",
            r.raw
        );
    }
    eprintln!("{who}: healthy on all {} reads", reads.len());
    Ok(())
}

/// C after its owner's SIGKILL: still there, FIN-WAIT-1, no owner, not healthy.
fn check_dead_owner(during: &[(Duration, bool, Status)], port: u16) -> Result<()> {
    let rows: Vec<&StatusSocket> = during
        .iter()
        .filter(|(_, k, _)| *k)
        .filter_map(|(_, _, st)| row(st, port))
        .collect();
    ensure!(
        rows.len() >= 3,
        "C's socket left status after the kill: {} rows",
        rows.len()
    );
    for r in &rows {
        ensure!(
            r.verdict != "healthy",
            "a dead owner's socket shown healthy: {}",
            r.raw
        );
    }
    let last = rows.last().context("rows")?;
    ensure!(
        last.state.as_deref() == Some("FIN-WAIT-1")
            && last.owner_state.as_deref() == Some("no owner"),
        "{}",
        last.raw
    );
    ensure!(
        last.verdict == "closing" && last.unacked_bytes > 0,
        "{}",
        last.raw
    );
    eprintln!("C after SIGKILL: {}", last.raw);
    Ok(())
}
