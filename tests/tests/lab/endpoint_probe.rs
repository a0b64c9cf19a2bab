//! A black hole without any DNS change, the name answering api1 and api2.
//! - api1 vanishes: the peer probe (up to 11 handshakes, all timing out) confirms it dead and
//!   the socket is killed within 7 s, well before the stall-timeout (10 s): provably the
//!   probe's doing, with the count rule off (`--stall-unanswered 0`; at its default the 8th
//!   RTO and the probe race, and either kill is right);
//! - only the client's flow is dropped (api1 still accepts new connections): the probe finds
//!   the peer alive, so the stall rule decides, as without an endpoint: 8 RTOs in a row where
//!   linear timeouts are armed (Linux 6.1), else stall-timeout (4 s).

use std::time::Duration;

use anyhow::{Result, ensure};
use lifeline_tests::assertions::endpoint_checks::check_dropped;
use lifeline_tests::assertions::endpoint_log::PEER_PROBE;
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::endpoint_scenario::{
    agent_resolved, back_on, check_kill, wait_kill, watched_on,
};
use lifeline_tests::{ApiLab, api, mono_ms, require_root};

#[test]
fn dead_peer_is_confirmed_by_the_probe_within_7s() -> Result<()> {
    require_root();
    let set = [api(1, false), api(2, false)];
    let l = ApiLab::new(&set)?;
    let args = ApiLab::agent_args(None, &["--stall-unanswered", "0"]);
    let agent = agent_resolved(&l, &args, &set)?;
    // The client tries addresses in sorted order: it lands on api1.
    let c = l.kube_client(&[])?;
    let old = watched_on(&agent, &c, api(1, false), "ok")?;

    let fault = l.lab.blackhole(api(1, false))?;
    let fault_ms = mono_ms();
    let kill = wait_kill(&agent, old.local_port, Duration::from_secs(20))?;
    let after = kill.at_ms - fault_ms;
    eprintln!("killed {after} ms after the black hole: {}", kill.raw);
    check_kill(&kill, "dead-peer")?;
    ensure!(
        after <= 7_000,
        "killed {after} ms after the fault; want <= 7 s (stall-timeout is 10 s)"
    );
    let probes: Vec<_> = agent
        .endpoint_events_with(PEER_PROBE)
        .into_iter()
        .filter(|p| p.is_probe_of(api(1, false)) && p.at_ms >= fault_ms)
        .collect();
    ensure!(
        probes
            .iter()
            .any(|p| p.result == "dead" && p.at_ms <= kill.at_ms),
        "no probe found api1 dead before the kill: {probes:?}"
    );
    // api1 still answers in DNS but is gone: the client's connect times out, then api2.
    back_on(&c, &old, api(2, false), "ok", Duration::from_secs(15))?;
    check_dropped(&l, &fault)
}

#[test]
fn flow_blackhole_with_live_peer_is_left_to_the_stall_rule() -> Result<()> {
    const STALL_MS: u64 = 4_000;
    require_root();
    let set = [api(1, false), api(2, false)];
    let l = ApiLab::new(&set)?;
    let agent = agent_resolved(&l, &ApiLab::agent_args(Some("4s"), &[]), &set)?;
    let c = l.kube_client(&[])?;
    let old = watched_on(&agent, &c, api(1, false), "ok")?;

    let fault = l.lab.blackhole_flow(old.local_port)?;
    let fault_ms = mono_ms();
    let kill = wait_kill(&agent, old.local_port, Duration::from_secs(20))?;
    let after = kill.at_ms - fault_ms;
    eprintln!("killed {after} ms after the flow black hole: {}", kill.raw);
    check_kill(&kill, "stalled")?;
    ensure!(
        after <= STALL_MS + 3_000,
        "killed {after} ms after the fault; want stall-timeout + 3 s"
    );
    // Its evidence: with linear timeouts 8 unanswered transmissions in a row, without them
    // the whole stall-timeout.
    let evidence = if kernel::has(&features::LINEAR_TIMEOUTS) {
        kill.unanswered_rtos.is_some_and(|r| r >= 8)
    } else {
        kill.last_ack_age_ms.is_some_and(|a| a >= STALL_MS)
    };
    ensure!(evidence, "a stall without its evidence: {}", kill.raw);
    let probes: Vec<_> = agent
        .endpoint_events_with(PEER_PROBE)
        .into_iter()
        .filter(|p| p.is_probe_of(api(1, false)) && p.at_ms >= fault_ms)
        .collect();
    ensure!(
        probes.iter().all(|p| p.result == "alive"),
        "api1 accepts connections, yet a probe said otherwise: {probes:?}"
    );
    // New connections to api1 still work: the client re-dials api1 (first in order).
    back_on(&c, &old, api(1, false), "ok", Duration::from_secs(15))?;
    check_dropped(&l, &fault)
}
