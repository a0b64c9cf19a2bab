//! Scenario (a): the peer silently vanishes (every packet to and from it dropped).
//! With lifeline the socket is killed within stall-timeout + 3 s and the client sees
//! ECONNABORTED; without it the socket stays ESTABLISHED and the client hangs.
//! IPv4 connects before the agent starts (adopted at start: armed by the TCP iterator or,
//! on older kernels, polled); IPv6 after (seen by `connect6` and `sock_ops`): both paths.

use std::time::Duration;

use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::scenario::{KillReport, Setup, blackhole_until_killed};
use lifeline_tests::{Agent, Lab, SERVER_V4, assertions::ss, mono_ms, require_root};

const STALL: Duration = Duration::from_secs(4);

#[test]
fn blackhole_is_killed() -> anyhow::Result<()> {
    require_root();
    let s = Setup::new()?;
    let client = s.heartbeat_client(&[])?;
    let mut agent = Agent::start(&s.lab, &s.cgroup)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let report = blackhole_until_killed(&s, &agent, &client, STALL)?;
    eprintln!(
        "killed {} ms after the black hole; client error: {}",
        report.decision.at_ms - report.fault_ms,
        report.client_error.raw
    );
    // Exactly one socket was in trouble, so exactly one kill.
    let kills = agent
        .decisions()
        .iter()
        .filter(|d| d.action == "kill")
        .count();
    assert_eq!(kills, 1, "decisions: {:?}", agent.decisions());
    kernel::report(
        &features::SOCK_DESTROY,
        &format!(
            "killed; the client got {}",
            report.client_error.raw["error"]
        ),
    );
    Ok(())
}

/// The same over IPv6, connected after the agent started: recorded by `connect6` and
/// `sock_ops`, the stall seen by the socket's own callbacks. The probe, the kill and the
/// client's error do not depend on the family.
#[test]
fn blackhole_v6_is_killed() -> anyhow::Result<()> {
    require_root();
    let s = Setup::new()?;
    let mut agent = Agent::start(&s.lab, &s.cgroup)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let client = s.heartbeat_client_to(true, &[])?;
    let report = blackhole_until_killed(&s, &agent, &client, STALL)?;
    assert!(
        report.decision.peer.starts_with("[2001:db8::2]"),
        "{}",
        report.decision.raw
    );
    let (_, sock) = report.seen.first().expect("seen in status after the fault");
    assert_eq!(sock.source, "sock_ops", "{}", sock.raw);
    assert!(
        report.seen.iter().any(|(_, s)| s.trouble_age_ms.is_some()),
        "the callbacks never saw the trouble: {:?}",
        report.seen.iter().map(|(_, s)| &s.raw).collect::<Vec<_>>()
    );
    kernel::report(
        &features::SOCK_OPS,
        &format!(
            "IPv6 socket recorded at its connect, stalled by its callbacks, killed {} ms after the black hole",
            report.decision.at_ms - report.fault_ms
        ),
    );
    kernel::report(&features::LINEAR_TIMEOUTS, &stall_evidence(&report)?);
    Ok(())
}

/// How the stall was proved: with linear timeouts (Linux 6.1) 8 RTOs in a row within less
/// than the stall timeout of trouble; without, the time rule, with every RTO that fits in it.
/// The trouble episode's age, not the time since the last ACK, is what proves linear
/// timeouts: doubling RTOs from 200 ms need 51 s for 8, linear ones about 2 s. The time
/// since the last ACK also holds the client's pause before its first unanswered write and
/// the sweep's latency (seconds under the kernel matrix's emulated CPUs), so both rules can
/// be met by the kill's time; the message names the count rule either way.
fn stall_evidence(report: &KillReport) -> anyhow::Result<String> {
    let f = &report.decision.raw["fields"];
    let rtos = f["unanswered_rtos"].as_u64().unwrap_or(0);
    let quiet = f["last_ack_age_ms"].as_u64().unwrap_or(0);
    let trouble = f["trouble_age_ms"].as_u64().unwrap_or(u64::MAX);
    let lto = report
        .seen
        .iter()
        .find_map(|(_, s)| s.raw["linear_timeouts"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let stall_ms = u64::try_from(STALL.as_millis())?;
    if kernel::has(&features::LINEAR_TIMEOUTS) {
        anyhow::ensure!(lto == "armed", "linear_timeouts {lto:?} in status");
        anyhow::ensure!(
            rtos >= 8 && trouble < stall_ms,
            "not the count rule: {rtos} RTOs in {trouble} ms of trouble: {}",
            report.decision.raw
        );
        Ok(format!(
            "status `linear_timeouts: armed`; stalled by {rtos} unanswered transmissions in a row in {trouble} ms of trouble, {quiet} ms without an ACK (stall-timeout {stall_ms} ms)"
        ))
    } else {
        anyhow::ensure!(
            lto.starts_with("refused"),
            "linear_timeouts {lto:?} in status"
        );
        anyhow::ensure!(
            quiet >= stall_ms,
            "killed before the stall timeout without linear timeouts: {}",
            report.decision.raw
        );
        Ok(format!(
            "status `linear_timeouts: {lto}`; stalled by the time rule: {rtos} RTOs, {quiet} ms without an ACK"
        ))
    }
}

/// The control: the same fault with no agent. The kernel would retransmit for ~15 minutes
/// (`tcp_retries2` = 15), so 3 x stall-timeout later the socket is still ESTABLISHED and the
/// client is still blocked in its read, without any error.
#[test]
fn blackhole_without_agent_hangs() -> anyhow::Result<()> {
    require_root();
    let s = Setup::new()?;
    let client = s.heartbeat_client(&[])?;
    let port = client.local_port().expect("local port");
    client.wait_event("a good heartbeat", Duration::from_secs(10), |e| {
        e.event == "ok"
    })?;
    let fault = s.lab.blackhole(SERVER_V4.into())?;
    let fault_ms = mono_ms();
    std::thread::sleep(STALL * 3);

    let sock = ss::find(&s.lab.client, port, Lab::server_addr(false))?;
    let sock = sock.unwrap_or_else(|| {
        panic!(
            "socket gone without the agent:\n{}",
            ss::dump(&s.lab.client)
        )
    });
    eprintln!(
        "{} ms after the black hole, still ESTABLISHED: {sock:?}",
        mono_ms() - fault_ms
    );
    assert!(
        sock.send_q > 0,
        "the unanswered request should sit in Send-Q: {sock:?}"
    );
    assert!(
        client.errors().is_empty(),
        "client saw an error: {}",
        client.dump()
    );
    let last_ok = client
        .events()
        .iter()
        .rev()
        .find(|e| e.event == "ok")
        .map_or(0, |e| e.mono_ms);
    assert!(
        last_ok <= fault_ms + 1500,
        "heartbeats went on through the black hole: {}",
        client.dump()
    );
    let (_, dropped) = s.lab.counters(&fault)?;
    assert!(
        dropped > 0,
        "the black hole dropped nothing:\n{}",
        s.lab.nft_ruleset()
    );
    Ok(())
}
