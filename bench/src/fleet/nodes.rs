//! What runs on each node: the kubelet-like client (restarted by the dig script when its
//! answer changes) and, on lifeline's nodes, the agent.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::infra::api_addrs::DNS_V4;
use lifeline_tests::infra::dnsquery::lookup;
use lifeline_tests::infra::paths::fixture;
use lifeline_tests::{API_NAME, Agent, Proc, mono_ms, wait_until};

use super::contender::Contender;
use super::topo::{Fleet, NodeHost};

/// The thread's script: a query every 3 s from the node, a client restart on any change.
const DIG_EVERY_MS: u64 = 3000;

/// The processes of one node.
#[derive(Default)]
pub(super) struct NodeRun {
    pub client: Option<Proc>,
    dig_known: Option<Vec<IpAddr>>,
    dig_next_ms: u64,
    pub restarts: usize,
}

/// Starts the client of `host` inside its cgroup and namespace.
pub(super) fn start_client(host: &NodeHost) -> Result<Proc> {
    let bin = fixture("kube-client")?;
    let args = host.contender.client_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cmd = host
        .cgroup
        .command_in_netns(host.ns.name(), bin.to_str().context("path")?, &args);
    Proc::spawn("kube-client", cmd)
}

/// Starts every client, spread evenly over one heartbeat interval (10 s) so their phases
/// differ, as on a real fleet. The contenders take turns (one node of each, then the next),
/// so whatever the moment of a start does to a client (the lab's own load grows as the fleet
/// comes up) falls on every contender alike.
pub(super) fn start_clients(fleet: &Fleet) -> Result<Vec<NodeRun>> {
    let n = fleet.nodes.len();
    let gap = Duration::from_secs(10) / u32::try_from(n.max(1))?;
    let per = n / Contender::ALL.len();
    let mut runs: Vec<NodeRun> = (0..n).map(|_| NodeRun::default()).collect();
    let order = (0..per).flat_map(|i| (0..Contender::ALL.len()).map(move |c| c * per + i));
    for k in order {
        let host = &fleet.nodes[k];
        crate::pool::check_interrupted()?;
        let mut run = NodeRun {
            client: Some(start_client(host)?),
            ..NodeRun::default()
        };
        if host.contender == Contender::DigScript {
            run.dig_known = dig(host);
            // Each node's script has its own phase within the 3 s period.
            let phase = DIG_EVERY_MS * u64::try_from(k % 30)? / 30;
            run.dig_next_ms = mono_ms() + DIG_EVERY_MS + phase;
        }
        runs[k] = run;
        std::thread::sleep(gap);
    }
    Ok(runs)
}

/// One turn of every dig script that is due; returns how many clients it restarted.
pub(super) fn dig_tick(fleet: &Fleet, runs: &mut [NodeRun]) -> usize {
    let mut restarted = 0;
    for (host, run) in fleet.nodes.iter().zip(runs.iter_mut()) {
        let now = mono_ms();
        if host.contender != Contender::DigScript || now < run.dig_next_ms {
            continue;
        }
        run.dig_next_ms = now + DIG_EVERY_MS;
        // A failed query changes nothing: the script compares answers, not errors.
        let Some(answer) = dig(host) else { continue };
        if run.dig_known.as_ref() == Some(&answer) {
            continue;
        }
        run.dig_known = Some(answer);
        if let Some(mut old) = run.client.take() {
            old.kill();
        }
        match start_client(host) {
            Ok(p) => run.client = Some(p),
            Err(e) => eprintln!("lab-bench: fleet: dig script restart failed: {e:#}"),
        }
        run.restarts += 1;
        restarted += 1;
    }
    restarted
}

fn dig(host: &NodeHost) -> Option<Vec<IpAddr>> {
    Some(lookup(host.ns.name(), DNS_V4.into(), API_NAME).ok()?.addrs)
}

/// Starts an agent on every lifeline node at once (loading is the slow part, and the
/// kernel does it one program at a time anyway), then waits for all to be ready.
pub(super) fn start_agents(fleet: &Fleet) -> Result<Vec<Agent>> {
    let args = Contender::agent_args();
    let mut agents = Vec::new();
    for host in fleet
        .nodes
        .iter()
        .filter(|h| h.contender == Contender::Lifeline)
    {
        agents.push(Agent::start_in(&host.ns, &[host.cgroup.path()], &args)?);
    }
    let t0 = mono_ms();
    for (i, a) in agents.iter_mut().enumerate() {
        crate::pool::check_interrupted()?;
        let left = Duration::from_mins(4).saturating_sub(Duration::from_millis(mono_ms() - t0));
        a.wait_ready(left.max(Duration::from_secs(1)))
            .with_context(|| format!("agent {i} of {}", fleet.nodes.len() / 4))?;
    }
    println!(
        "fleet: {} agents ready in {:.1} s",
        agents.len(),
        super::raw::secs(mono_ms() - t0)
    );
    Ok(agents)
}

/// Kills every client (between scenarios) and waits briefly until the cgroups are empty.
pub(super) fn stop_clients(fleet: &Fleet, runs: Vec<NodeRun>) {
    drop(runs);
    let _ = wait_until(
        "the clients to exit",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || {
            Ok(fleet
                .nodes
                .iter()
                .all(|h| h.cgroup.pids().is_empty())
                .then_some(()))
        },
    );
}
