//! Fast phases that meet the application's data (issue 33, "do no harm"). No keepalive probe
//! leaves while data is in flight (`tcp_keepalive_timer()` only re-arms), so a poke after the
//! application wrote finds that nothing left since the last one. Such a phase must end as
//! busy: counted as a probe without its octet it claims a tc problem that is not there (the
//! `LifelineFastProbesFailing` alert), as a kubelet's status update did in CI when it went out
//! between the first unanswered probe and the timer that opens the phase. The request's
//! retransmissions bring the kill either way.
//!
//! The lab's heartbeat client sends on whole multiples of its period, and the flow is
//! black-holed 100 ms after one request was answered: with the agent's keepalive (1 s, 1 s)
//! the first unanswered probe leaves 1 s after that answer, and the keepalive timer that
//! opens the phase fires 2 s after it.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::scenarios::endpoint_scenario::wait_kill;
use lifeline_tests::scenarios::idle_lab::{SERVER, wait_armed};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::scenarios::tc_lab::{agent, metric};
use lifeline_tests::{Client, mono_ms, require_root, sleep_to_boundary};

/// How the fast counters moved from the fault to the kill.
struct Moved {
    pokes: f64,
    no_octet: f64,
    busy: f64,
}

/// A heartbeat client every `period_ms`, its flow black-holed right after an answer, until
/// the agent kills it (by its retransmissions: `stalled`).
fn run(period_ms: u64) -> Result<Moved> {
    let s = Setup::new()?;
    let agent = agent(&s)?;
    let period = format!("{period_ms}ms");
    let args = [
        "--peer",
        SERVER,
        "heartbeat",
        "--interval",
        &period,
        "--aligned",
    ];
    let client = Client::start(&s.lab, Some(&s.cgroup), &args)?;
    client.wait_event("served", Duration::from_secs(10), |e| e.event == "ok")?;
    let port = client.local_port().context("no local port")?;
    wait_armed(&agent, port, "1s,1s,")?;
    let names = ["pokes", "no_octet", "busy"].map(|n| format!("lifeline_probe_fast_{n}_total"));
    let mut before = [0.0; 3];
    for (b, n) in before.iter_mut().zip(&names) {
        *b = metric(&s, n)?;
    }
    sleep_to_boundary(Duration::from_millis(period_ms));
    std::thread::sleep(Duration::from_millis(100));
    let _fault = s.lab.blackhole_flow(port)?;
    let fault_ms = mono_ms();
    let kill = wait_kill(&agent, port, Duration::from_secs(40))?;
    let mut moved = [0.0; 3];
    for ((m, n), b) in moved.iter_mut().zip(&names).zip(before) {
        *m = metric(&s, n)? - b;
    }
    let [pokes, no_octet, busy] = moved;
    eprintln!(
        "period {period_ms} ms: killed {} ms after the fault ({}); fast pokes {pokes}, busy {busy}, no octet {no_octet}",
        kill.at_ms.saturating_sub(fault_ms),
        kill.verdict
    );
    ensure!(
        kill.verdict == "stalled",
        "the request's retransmissions bring the kill: {}",
        kill.raw
    );
    let table = agent.status_table()?;
    ensure!(
        !table.contains("hidden"),
        "no device is hidden here:\n{table}"
    );
    Ok(Moved {
        pokes,
        no_octet,
        busy,
    })
}

/// The request leaves 2.5 s after the answer: the phase has poked 3 or 4 probes (of the
/// verdict's 12), and the next poke finds that the last one sent nothing.
#[test]
fn data_sent_in_a_fast_phase_ends_it_as_busy_never_as_a_missing_octet() -> Result<()> {
    require_root();
    let m = run(2_500)?;
    ensure!(
        m.pokes >= 2.0,
        "the phase did not run before the request: {} pokes",
        m.pokes
    );
    ensure!(
        m.busy >= 1.0 && m.no_octet == 0.0,
        "the request must end the phase as busy: busy {}, no octet {}",
        m.busy,
        m.no_octet
    );
    Ok(())
}

/// The request leaves 1.5 s after the answer, between the first unanswered probe and the
/// timer that would send the second: that timer sends nothing. Through fentry on
/// `tcp_write_wakeup()` no phase opens; through the timer tracepoint (the fallback) one opens
/// and its first pass ends it as busy. Either way nothing is poked and no octet is missing.
#[test]
fn data_sent_before_the_second_probe_pokes_nothing_and_misses_no_octet() -> Result<()> {
    require_root();
    let m = run(1_500)?;
    ensure!(
        m.pokes == 0.0 && m.no_octet == 0.0,
        "a timer that sent no probe opened nothing to poke: pokes {}, no octet {} (busy {})",
        m.pokes,
        m.no_octet,
        m.busy
    );
    Ok(())
}
