//! What the API servers and dnsmasq logged, turned into (time, node) events: the servers
//! print one line per accepted connection and per request, with the client's address, and
//! every node has its own address, so each line belongs to one node.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr, SocketAddrV4};

use serde_json::Value;

use super::topo::{Fleet, node_index};

pub(super) fn requests(fleet: &Fleet, from: u64, to: u64, path: &str) -> Vec<(u64, usize)> {
    strip(server_events(fleet, from, to, |v| {
        v["event"] == "request" && v["path"] == path
    }))
}

fn strip(events: Vec<(u64, usize, u16)>) -> Vec<(u64, usize)> {
    events.into_iter().map(|(ms, k, _)| (ms, k)).collect()
}

/// The first request of every client connection (node, port): a connection that carries
/// requests is a client's, never an agent's probe.
pub(super) fn first_requests(events: &[(u64, usize, u16)]) -> Vec<(u64, usize)> {
    let mut seen = HashSet::new();
    events
        .iter()
        .filter(|&&(_, k, port)| seen.insert((k, port)))
        .map(|&(ms, k, _)| (ms, k))
        .collect()
}

/// The accepted connections whose (node, port) never made a request.
pub(super) fn without_requests(
    accepted: &[(u64, usize, u16)],
    requests: &[(u64, usize, u16)],
) -> Vec<(u64, usize)> {
    let used: HashSet<(usize, u16)> = requests.iter().map(|&(_, k, p)| (k, p)).collect();
    accepted
        .iter()
        .filter(|&&(_, k, p)| !used.contains(&(k, p)))
        .map(|&(ms, k, _)| (ms, k))
        .collect()
}

/// Events of every API server between `from` and `to` that `pred` keeps: (ms, node, the
/// client's port), in time order.
pub(super) fn server_events(
    fleet: &Fleet,
    from: u64,
    to: u64,
    pred: impl Fn(&Value) -> bool,
) -> Vec<(u64, usize, u16)> {
    let mut out = Vec::new();
    for server in &fleet.lab.servers {
        for line in server.stdout_lines() {
            let Ok(v) = serde_json::from_str::<Value>(&line.text) else {
                continue;
            };
            let Some(ms) = v["mono_ms"].as_u64() else {
                continue;
            };
            if ms < from || ms > to || !pred(&v) {
                continue;
            }
            if let Some(p) = peer(&v)
                && let Some(k) = node_index(p.ip())
            {
                out.push((ms, k, p.port()));
            }
        }
    }
    out.sort_unstable();
    out
}

fn peer(v: &Value) -> Option<SocketAddr> {
    v["peer"].as_str()?.parse().ok()
}

/// The client ends of the connections api1 accepted since `from` (the flows a balancer
/// that forgets api1's state drops; ones already closed match nothing).
pub(super) fn flows_to_api1(fleet: &Fleet, from: u64) -> Vec<SocketAddrV4> {
    let api1 = &fleet.lab.servers[0];
    api1.stdout_lines()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(&l.text).ok())
        .filter(|v| v["event"] == "accepted" && v["mono_ms"].as_u64().is_some_and(|ms| ms >= from))
        .filter_map(|v| {
            let p = peer(&v)?;
            let ip = match p.ip() {
                IpAddr::V4(v4) => v4,
                IpAddr::V6(v6) => v6.to_ipv4_mapped()?,
            };
            Some(SocketAddrV4::new(ip, p.port()))
        })
        .collect()
}

/// `dnsmasq[..]: query[A] api.lab.test from 203.0.113.7`: the asking node.
pub(super) fn dns_query_node(line: &str) -> Option<usize> {
    let rest = &line[line.find("query[")?..];
    let from = rest.split(" from ").nth(1)?.trim();
    node_index(from.parse().ok()?)
}

/// Per node, the API server (0, 1, 2) its latest request between `from` and `at` went to:
/// where the node was when the fault struck.
pub(super) fn server_of_nodes(fleet: &Fleet, from: u64, at: u64) -> Vec<Option<usize>> {
    let mut latest: Vec<Option<(u64, usize)>> = vec![None; fleet.nodes.len()];
    for (i, server) in fleet.lab.servers.iter().enumerate() {
        for line in server.stdout_lines() {
            let Ok(v) = serde_json::from_str::<Value>(&line.text) else {
                continue;
            };
            let (Some(ms), Some(p)) = (v["mono_ms"].as_u64(), peer(&v)) else {
                continue;
            };
            if v["event"] != "request" || ms < from || ms > at {
                continue;
            }
            if let Some(slot) = node_index(p.ip()).and_then(|k| latest.get_mut(k))
                && slot.is_none_or(|(t, _)| t < ms)
            {
                *slot = Some((ms, i));
            }
        }
    }
    latest.into_iter().map(|l| l.map(|(_, i)| i)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_dnsmasq_query_line_names_its_node() {
        let l = "dnsmasq: query[A] api.lab.test from 203.0.113.7";
        assert_eq!(super::dns_query_node(l), Some(6));
        assert_eq!(
            super::dns_query_node("dnsmasq: reply api.lab.test is 198.51.100.2"),
            None
        );
    }

    #[test]
    fn a_connection_with_requests_is_a_client_one_without_is_a_probe() {
        let requests = [(10, 3, 4000), (20, 3, 4000), (30, 5, 4100)];
        let accepted = [(5, 3, 4000), (6, 3, 4001), (25, 5, 4100)];
        assert_eq!(super::first_requests(&requests), [(10, 3), (30, 5)]);
        assert_eq!(super::without_requests(&accepted, &requests), [(6, 3)]);
    }
}
