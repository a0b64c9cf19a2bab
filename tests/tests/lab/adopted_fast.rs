//! Issue 37: a socket lifeline adopts is judged exactly as one it saw being born. On a real
//! node kubelet's connection is older than the agent, so every client here connects BEFORE
//! the agent starts (its defaults: kubelet's cgroup and the endpoint's clients): kubelet's
//! own idle watch (the lab's Go client, kubelet's dialer, in kubelet's cgroup: adopted at
//! start), a `kubectl` watch (the same Go client in a cgroup nobody targets: adopted when
//! the endpoint's address is armed, a sweep later) and a busy heartbeat client in kubelet's
//! cgroup. Each is listed as adopted first; 10 s after the agent is ready each one's flow is
//! black-holed (new connections still work), and each is killed within the bound the
//! born-under-lifeline tests assert: the idle ones as silent within `FAST_SILENT_BUDGET`
//! with their octet probes counted (`probe_bytes`: the fast-probe device was there before
//! the first unanswered probe), the busy one as stalled within stall-timeout + 3 s
//! (`blackhole.rs`), by 8 unanswered transmissions where the kernel has linear timeouts.
//! Both idle sockets are the endpoint's: their fast phases open at the look their overdue
//! schedule brings (`fast_probes.hastened` in `lifeline status --json`), which starts for an
//! adopted socket as for a born one.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::assertions::decision::Decision;
use lifeline_tests::assertions::watched::kill_decision;
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::idle_lab::{
    FAST_SILENT_BUDGET, SERVER, client_aborted, silent_kill_after_flow_blackhole, wait_armed,
};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, AgentArgs, Cgroup, Client, mono_ms, require_root, wait_until};

/// The lab agent's `--stall-timeout` (`AgentArgs::default`), and `blackhole.rs`'s bound.
const STALL: Duration = Duration::from_secs(4);
const STALL_BUDGET: Duration = Duration::from_secs(4 + 3);
/// How long after the agent is ready the faults come: past everything start-up does.
const SETTLED: Duration = Duration::from_secs(10);

#[test]
fn adopted_sockets_are_killed_as_fast_as_born_ones() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let other = Cgroup::new()?;
    let go_args = ["-peer", SERVER, "-every", "60", "-keepalive", "30s"];
    let kubelet = Client::start_bin("go-watch", &s.lab, Some(&s.cgroup), &go_args)?;
    let kubectl = Client::start_bin("go-watch", &s.lab, Some(&other), &go_args)?;
    let hb = s.heartbeat_client(&[])?;
    for c in [&kubelet, &kubectl, &hb] {
        c.wait_event("the first event", Duration::from_secs(10), |e| {
            e.event == "ok"
        })?;
    }
    let args = AgentArgs {
        extra: ["--endpoint-clients", "--endpoint", SERVER]
            .map(String::from)
            .into(),
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let ready_ms = mono_ms();
    let port = |c: &Client| c.local_port().context("a client's local port");
    let ports = [port(&kubelet)?, port(&kubectl)?, port(&hb)?];
    adopted(&agent, &ports)?;
    for p in ports {
        wait_armed(&agent, p, "1s,1s,20")?;
    }
    std::thread::sleep(Duration::from_millis(
        (ready_ms + millis(SETTLED)).saturating_sub(mono_ms()),
    ));

    // Every fault now, milliseconds apart; the helper then waits for kubelet's kill and
    // checks it (budget, octet probes, ECONNABORTED, the re-dial), the others after it.
    let hb_fault = s.lab.blackhole_flow(ports[2])?;
    let hb_fault_ms = mono_ms();
    let kubectl_fault = s.lab.blackhole_flow(ports[1])?;
    let kubectl_fault_ms = mono_ms();
    let after = silent_kill_after_flow_blackhole(&s, &agent, &kubelet)?;
    eprintln!("adopted at start (kubelet's cgroup): killed as silent {after} ms after the fault");

    let d = kill_of(&agent, ports[1])?;
    let kubectl_after = d.at_ms.saturating_sub(kubectl_fault_ms);
    let octets = d.probe_bytes.unwrap_or(0);
    eprintln!(
        "adopted by its peer (kubectl): killed {kubectl_after} ms after the fault: {}",
        d.raw
    );
    if kernel::has(&features::FAST_PROBES) {
        ensure!(
            d.verdict == "silent"
                && u128::from(kubectl_after) <= FAST_SILENT_BUDGET.as_millis()
                && octets >= 8,
            "kubectl's socket: killed {kubectl_after} ms after the fault ({} verdict) with {octets} octet probes; born ones: <= {FAST_SILENT_BUDGET:?}, >= 8",
            d.verdict
        );
    }
    aborted(&kubectl, &s, &kubectl_fault)?;
    if kernel::has(&features::FAST_PROBES) {
        // Both idle sockets are the endpoint's: each one's phase was opened by the agent at
        // the look its overdue schedule brought, before the kernel's second probe.
        let status = agent.status_json()?;
        let hastened = status["fast_probes"]["hastened"].as_u64().unwrap_or(0);
        ensure!(
            hastened >= 2,
            "fast phases opened at the overdue look: {hastened}, want one per idle socket: {}",
            status["fast_probes"]
        );
    }

    let d = kill_of(&agent, ports[2])?;
    let hb_after = d.at_ms.saturating_sub(hb_fault_ms);
    eprintln!(
        "adopted heartbeat client: killed {hb_after} ms after the fault: {}",
        d.raw
    );
    ensure!(
        d.verdict == "stalled" && d.outcome == "killed",
        "not a stall kill: {}",
        d.raw
    );
    ensure!(
        u128::from(hb_after) <= STALL_BUDGET.as_millis(),
        "killed {hb_after} ms after the fault; born sockets are within {STALL_BUDGET:?}"
    );
    let (rtos, quiet) = (
        d.unanswered_rtos.unwrap_or(0),
        d.last_ack_age_ms.unwrap_or(u64::MAX),
    );
    if kernel::has(&features::LINEAR_TIMEOUTS) {
        ensure!(
            rtos >= 8 && quiet < millis(STALL),
            "not the count rule (linear timeouts armed at adoption?): {rtos} RTOs, {quiet} ms without an ACK: {}",
            d.raw
        );
    }
    aborted(&hb, &s, &hb_fault)?;
    kernel::report(
        &features::FAST_PROBES,
        &format!(
            "adopted idle sockets killed as silent {after} and {kubectl_after} ms after the fault (octet probes counted), a busy one stalled after {hb_after} ms"
        ),
    );
    Ok(())
}

/// The start-up scan and the endpoint's arming adopted every one of `ports`: `status` lists
/// each as `adopted`, and the log's adoption lines count them (armed, where the kernel can).
fn adopted(agent: &Agent, ports: &[u16]) -> Result<()> {
    for &p in ports {
        let sock = wait_until(
            "the socket in lifeline status",
            Duration::from_secs(10),
            Duration::from_millis(200),
            || Ok(agent.status()?.socket_for_port(p).cloned()),
        )?;
        ensure!(
            sock.source == "adopted",
            "port {p} not adopted: {}",
            sock.raw
        );
    }
    let lines: Vec<serde_json::Value> = agent
        .log()
        .into_iter()
        .filter_map(|(_, v)| {
            let f = v.get("fields")?;
            (f.get("message")?.as_str()? == "pre-existing sockets adopted").then(|| f.clone())
        })
        .collect();
    eprintln!("adoption: {lines:?}");
    let sum = |k: &str| lines.iter().filter_map(|l| l[k].as_u64()).sum::<u64>();
    let want = u64::try_from(ports.len())?;
    ensure!(sum("adopted") == want, "adoption lines: {lines:?}");
    if kernel::has(&features::ITER_CALLBACKS) {
        ensure!(sum("armed") == want, "adoption lines: {lines:?}");
    }
    Ok(())
}

/// The kill decision about local `port`, waiting a little for it.
fn kill_of(agent: &Agent, port: u16) -> Result<Decision> {
    let d = kill_decision(agent, port, Duration::from_secs(10))?;
    ensure!(d.outcome == "killed", "not killed: {}", d.raw);
    Ok(d)
}

/// The client got `ECONNABORTED`, and its black hole dropped packets.
fn aborted(client: &Client, s: &Setup, fault: &lifeline_tests::Fault) -> Result<()> {
    client_aborted(client)?;
    let (_, dropped) = s.lab.counters(fault)?;
    ensure!(dropped > 0, "the black hole dropped nothing");
    Ok(())
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
