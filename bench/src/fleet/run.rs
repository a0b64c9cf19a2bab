//! One scenario on the running fleet: fresh clients, a check that every node beats, the
//! scenario's steps on time, the dig scripts' turns, then everything the servers, dnsmasq
//! and the agents saw, cut to the scenario's own time.

use std::time::Duration;

use anyhow::Result;
use lifeline_tests::{Agent, mono_ms, wait_until};

use super::nodes::{dig_tick, start_clients, stop_clients};
use super::raw::{Raw, secs};
use super::scenario::{Applied, Scenario, first_step, heal, second_step};
use super::serverlog::{
    dns_query_node, first_requests, flows_to_api1, requests, server_events, server_of_nodes,
    without_requests,
};
use super::topo::Fleet;

/// Runs scenario `s`; `agents[i]` runs on node `first_agent + i`.
pub(super) fn scenario(
    fleet: &Fleet,
    agents: &[Agent],
    first_agent: usize,
    s: Scenario,
) -> Result<Raw> {
    let dns_before = fleet.lab.dns.log().lines().count();
    let start = mono_ms();
    let mut runs = start_clients(fleet)?;
    let n = fleet.nodes.len();
    // Every node beats before the fault: a fleet that never came up measures nothing.
    let beating = wait_until(
        "every node's first heartbeat",
        Duration::from_secs(40),
        Duration::from_millis(500),
        || {
            let seen = requests(fleet, start, u64::MAX, "/healthz");
            let mut up = vec![false; n];
            for &(_, k) in &seen {
                up[k] = true;
            }
            Ok(up.iter().all(|&u| u).then_some(()))
        },
    );
    let never_started = if beating.is_err() {
        let seen = requests(fleet, start, u64::MAX, "/healthz");
        (0..n).filter(|k| !seen.iter().any(|(_, j)| j == k)).count()
    } else {
        0
    };
    std::thread::sleep(Duration::from_secs(5));
    let mut applied = Applied::default();
    let flows = flows_to_api1(fleet, start);
    let t0 = first_step(fleet, s, &flows, &mut applied)?;
    let on_server = server_of_nodes(fleet, start, t0);
    println!("fleet: {} at {:.0} s", s.label(), secs(t0 - start));
    let mut second = None;
    let end = t0 + s.window_s() * 1000;
    let outcome = (|| -> Result<()> {
        while mono_ms() < end {
            crate::pool::check_interrupted()?;
            dig_tick(fleet, &mut runs);
            if let Some(at) = s.second_step_s()
                && second.is_none()
                && mono_ms() >= t0 + at * 1000
            {
                second = Some(second_step(fleet, s, &mut applied)?);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    })();
    let restarts = runs.iter().map(|r| r.restarts).collect();
    super::dump::clients(s, &runs);
    // Lift the faults before the clients go, so their FINs reach the servers.
    let healed = heal(fleet, &mut applied);
    stop_clients(fleet, runs);
    outcome?;
    healed?;
    let dns_log = fleet.lab.dns.log();
    let mut dns_queries = vec![0; n];
    for line in dns_log.lines().skip(dns_before) {
        if let Some(k) = dns_query_node(line) {
            dns_queries[k] += 1;
        }
    }
    let kills = agents
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            a.decisions()
                .into_iter()
                .filter(|d| d.outcome == "killed")
                .map(move |d| (d.logged_ms.unwrap_or(d.at_ms), first_agent + i))
        })
        .filter(|&(ms, _)| ms >= t0 && ms <= end)
        .collect();
    let accepted = server_events(fleet, start, end, |v| v["event"] == "accepted");
    // Up to the end plus a second: a connection accepted just before the end has its first
    // request just after.
    let all_requests = server_events(fleet, start, end + 1000, |v| v["event"] == "request");
    Ok(Raw {
        scenario: s,
        t0,
        second,
        end,
        probes: without_requests(&accepted, &all_requests),
        client_conns: first_requests(&all_requests),
        heartbeats: requests(fleet, start, end, "/healthz"),
        watches: requests(fleet, start, end, "/watch"),
        kills,
        dns_queries,
        restarts,
        on_server,
        never_started,
    })
}
