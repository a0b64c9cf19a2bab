//! Another service on the API endpoint's port: a `lab-server` host at an address the
//! endpoint's DNS never returns, and the checks about sockets to it (they are watched, they
//! are not the endpoint's, nothing is decided about them by DNS).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use crate::agent::Agent;
use crate::client::Client;
use crate::lab::Lab;
use crate::netns::NetNs;
use crate::paths::fixture;
use crate::proc::Proc;
use crate::status::StatusSocket;

/// Not an API host (198.51.100.2-4), not the DNS server (.53), not the client (.1).
pub const OUTSIDE_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 9);
pub const OUTSIDE_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 9);
/// The endpoint's port, where the other service listens too.
pub const PORT: u16 = 6443;

/// The other service. Fields drop top to bottom: the server, then its namespace.
pub struct Outside {
    pub server: Proc,
    pub host: NetNs,
}

impl Outside {
    /// Adds the host to `lab`'s bridge and starts `lab-server` on port 6443 there.
    ///
    /// # Errors
    /// When the host or the server cannot start.
    pub fn start(lab: &Lab) -> Result<Self> {
        let host = lab.add_host("outside", OUTSIDE_V4, OUTSIDE_V6)?;
        let bin = fixture("lab-server")?;
        let listen = format!("[::]:{PORT}");
        let cmd = host.command(bin.to_str().context("path")?, &["--listen", &listen]);
        let mut server = Proc::spawn("lab-server", cmd)?;
        server.wait_stdout(
            "the other service to listen",
            Duration::from_secs(10),
            |l| l.contains("\"listening\""),
        )?;
        Ok(Self { server, host })
    }

    #[must_use]
    pub fn addr() -> SocketAddr {
        SocketAddr::new(IpAddr::V4(OUTSIDE_V4), PORT)
    }
}

/// The local ports of `c`'s connections to the other service, in the order it made them.
#[must_use]
pub fn ports_to_outside(c: &Client) -> Vec<u16> {
    let peer = Outside::addr().to_string();
    c.events()
        .iter()
        .filter(|e| {
            e.event == "connected" && e.raw.get("peer").and_then(Value::as_str) == Some(&peer)
        })
        .filter_map(|e| e.local_port)
        .collect()
}

/// The row is listed as on the endpoint's port but not the endpoint's socket, its peer
/// never held by the endpoint's answers.
///
/// # Errors
/// When the row says otherwise.
pub fn assert_outside(s: &StatusSocket) -> Result<()> {
    ensure!(
        s.raw.get("endpoint_socket").and_then(Value::as_bool) == Some(false),
        "a socket to the other service counts as the endpoint's: {}",
        s.raw
    );
    ensure!(
        s.endpoint_member.as_deref() == Some("never-held"),
        "its peer is not shown as never held: {}",
        s.raw
    );
    Ok(())
}

/// The row is the endpoint's own socket.
///
/// # Errors
/// When it is not.
pub fn assert_endpoints(s: &StatusSocket) -> Result<()> {
    ensure!(
        s.raw.get("endpoint_socket").and_then(Value::as_bool) == Some(true),
        "not the endpoint's socket: {}",
        s.raw
    );
    Ok(())
}

/// Every decision the agent logged about any of `ports` (kill, orphan report, hold, ...).
#[must_use]
pub fn decisions_about(agent: &Agent, ports: &[u16]) -> Vec<crate::decision::Decision> {
    agent
        .decisions()
        .into_iter()
        .filter(|d| ports.iter().any(|p| d.is_for_port(*p)))
        .collect()
}

/// The agent's "never-held" lines about `peer`.
#[must_use]
pub fn never_held_lines(agent: &Agent, peer: SocketAddr) -> Vec<Value> {
    let peer = peer.to_string();
    agent
        .log()
        .into_iter()
        .map(|(_, v)| v)
        .filter(|v| {
            v.pointer("/fields/event").and_then(Value::as_str) == Some("never-held")
                && v.pointer("/fields/peer").and_then(Value::as_str) == Some(&peer)
        })
        .collect()
}

/// The peer probes the agent ran against `ip`.
#[must_use]
pub fn probes_of(agent: &Agent, ip: IpAddr) -> usize {
    agent
        .endpoint_events()
        .iter()
        .filter(|e| e.is_probe_of(ip))
        .count()
}
