//! lab-demo: the README's main command (`cargo xtask demo`, as root, `LIFELINE_BIN` set).
//!
//! A kubelet-like client heartbeats its API server once a second on one long-lived
//! connection. Then the load balancer "forgets" that one flow: its packets vanish, while new
//! connections still work. We watch it twice: without lifeline (the client hangs) and with
//! lifeline at its default stall timeout (the socket is killed, the client re-dials).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::assertions::ss;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::scenarios::timeline::{Timeline, outage};
use lifeline_tests::{Agent, AgentArgs, Client, Lab, mono_ms};

/// How long we watch the hung client without lifeline.
const WITHOUT_CAP: Duration = Duration::from_secs(45);
/// The agent's default `--stall-timeout`, used if `status` cannot tell us.
const DEFAULT_STALL_MS: u64 = 10_000;

fn main() -> ExitCode {
    if !lifeline_tests::infra::util::is_root() {
        eprintln!(
            "lab-demo: error: needs root (network namespaces, nftables, eBPF); run `cargo xtask demo` as root"
        );
        return ExitCode::FAILURE;
    }
    println!(
        "lifeline demo: a client heartbeats 198.51.100.2:6443 every 1 s; then the load balancer"
    );
    println!(
        "silently forgets that one flow (no FIN, no RST; new connections would still work).\n"
    );
    let run = without_lifeline().and_then(|()| with_lifeline());
    match run {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("lab-demo: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Starts the lab and a heartbeat client, waits for three good heartbeats, opens the black
/// hole and returns (setup, client, fault time).
fn begin(agent_args: Option<&AgentArgs>) -> Result<(Setup, Option<Agent>, Client, u64)> {
    let s = Setup::new()?;
    let agent = match agent_args {
        Some(a) => {
            let mut agent = Agent::start_with(&s.lab, &s.cgroup, a)?;
            println!("  starting lifeline (attaching its probes)...");
            agent.wait_ready(Duration::from_mins(1))?;
            Some(agent)
        }
        None => None,
    };
    let client = s.heartbeat_client(&["--redial"])?;
    client.wait_event("three good heartbeats", Duration::from_secs(15), |e| {
        e.event == "ok" && e.raw["seq"] == 3
    })?;
    let port = client.local_port().context("client port")?;
    // Strike between two heartbeats, as a real fault would.
    std::thread::sleep(Duration::from_millis(500));
    let fault = s.lab.blackhole_flow(port)?;
    let fault_ms = mono_ms();
    drop(fault); // only forgets the handles: the rule stays until the lab's namespaces go
    Ok((s, agent, client, fault_ms))
}

fn header(t: &Timeline, client: &Client, fault_ms: u64) {
    let (last_good, _) = outage(&client.events(), fault_ms);
    if let Some(ms) = last_good {
        t.say(ms, "last good heartbeat");
    }
    t.say(
        fault_ms,
        "BLACK HOLE: the balancer drops every packet of this connection",
    );
}

fn without_lifeline() -> Result<()> {
    println!("== 1. without lifeline ==");
    let (s, _, client, fault_ms) = begin(None)?;
    let mut t = Timeline::new(fault_ms);
    header(&t, &client, fault_ms);
    let port = client.local_port().context("client port")?;
    let cap_ms = fault_ms + u64::try_from(WITHOUT_CAP.as_millis())?;
    for _ in 0..WITHOUT_CAP.as_secs() {
        std::thread::sleep(
            Duration::from_secs(5).min(Duration::from_millis(cap_ms.saturating_sub(mono_ms()))),
        );
        t.catch_up(&client, None);
        if !client.errors().is_empty() || mono_ms() >= cap_ms {
            break;
        }
        let sock = ss::find(&s.lab.client, port, Lab::server_addr(false))?;
        let state = sock.map_or_else(
            || "socket gone".to_owned(),
            |x| {
                let n = x.retransmits_total();
                format!("socket ESTABLISHED, {n} retransmissions into nothing")
            },
        );
        t.say(
            mono_ms(),
            &format!("... client still waiting for its reply ({state})"),
        );
    }
    t.flush(&client, None);
    if client.errors().is_empty() {
        let now = mono_ms();
        let hung = t.rel(now);
        t.say(now, &format!("still hung at +{hung:.1} s; kubelet would be NotReady (the kernel gives up after ~15 min)"));
        println!("  outage: more than {hung:.1} s, and counting\n");
    }
    Ok(())
}

fn with_lifeline() -> Result<bool> {
    println!("== 2. with lifeline (its defaults) ==");
    let args = AgentArgs {
        stall_timeout: None,
        ..AgentArgs::default()
    };
    let (_s, agent, client, fault_ms) = begin(Some(&args))?;
    let agent = agent.context("agent")?;
    let stall_ms = agent
        .status()
        .map_or(DEFAULT_STALL_MS, |st| st.stall_timeout_ms);
    println!(
        "  lifeline is watching: a stall is 8 transmissions in a row unanswered (linear retransmission timeouts, Linux 6.1: about 2.4 s), or {} s without an ACK",
        stall_ms / 1000
    );
    let port = client.local_port().context("client port")?;
    let mut t = Timeline::new(fault_ms);
    header(&t, &client, fault_ms);
    let limit = stall_ms + 5000;
    let deadline = fault_ms + limit + 15_000;
    let mut next_progress = fault_ms + 2000;
    while mono_ms() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        t.catch_up(&client, Some(&agent));
        if outage(&client.events(), fault_ms).1.is_some() {
            break;
        }
        if mono_ms() >= next_progress && agent.decisions().is_empty() {
            t.say(
                next_progress,
                &format!("... client waiting; {}", seen_by(&agent, port)),
            );
            next_progress += 2000;
        }
    }
    t.flush(&client, Some(&agent));
    let (last_good, back) = outage(&client.events(), fault_ms);
    let (Some(last_good), Some(back)) = (last_good, back) else {
        println!(
            "  the client did not recover within {} s",
            (deadline - fault_ms) / 1000
        );
        eprintln!("lifeline log:\n{}", agent.proc.stderr_text());
        return Ok(false);
    };
    let ms = back - last_good;
    #[allow(clippy::cast_precision_loss)]
    let (secs, bound) = (ms as f64 / 1000.0, limit as f64 / 1000.0);
    println!("  outage: {secs:.1} s (last good heartbeat -> first good heartbeat after the fault)");
    if ms < limit {
        println!("  under the bound of stall timeout + 5 s = {bound:.1} s\n");
        Ok(true)
    } else {
        println!("  NOT under the bound of stall timeout + 5 s = {bound:.1} s\n");
        Ok(false)
    }
}

/// What `lifeline status` says about the client's socket right now.
#[allow(clippy::cast_precision_loss)]
fn seen_by(agent: &Agent, port: u16) -> String {
    match agent.status() {
        Ok(st) => st.socket_for_port(port).map_or_else(
            || "lifeline status does not list the socket".to_owned(),
            |s| {
                format!(
                    "lifeline status: {}, no ACK for {:.1} s, {} segment(s) unacked, {} retransmits",
                    s.verdict,
                    s.last_ack_age_ms as f64 / 1000.0,
                    s.unacked_segs,
                    s.retransmits
                )
            },
        ),
        Err(e) => format!("lifeline status failed: {e:#}"),
    }
}
