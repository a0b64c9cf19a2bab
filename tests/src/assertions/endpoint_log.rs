//! The agent's endpoint events (`target == "lifeline::endpoint"`): resolutions, DNS
//! failures and peer probes, parsed for assertions.

use serde_json::Value;

use crate::fixtures::agent::Agent;

/// `fields.message` of a resolution.
pub const RESOLVED: &str = "endpoint resolved";
/// `fields.message` of a failed resolution.
pub const DNS_FAILURE: &str = "DNS failure; keeping the last good set";
/// `fields.message` of a peer probe.
pub const PEER_PROBE: &str = "peer probe";

/// One endpoint event. Fields that the message does not carry are empty / None.
#[derive(Clone, Debug)]
pub struct EndpointEvent {
    /// `CLOCK_MONOTONIC` ms when the test read the line.
    pub at_ms: u64,
    pub message: String,
    pub endpoint: String,
    /// `addrs` split at commas (resolutions).
    pub addrs: Vec<String>,
    pub ttl_ms: Option<u64>,
    pub changed: Option<bool>,
    pub error: String,
    pub failures: Option<u64>,
    /// The probed peer and the probe's result: "alive" | "refused" | "dead".
    pub peer: String,
    pub result: String,
    pub raw: Value,
}

impl EndpointEvent {
    #[must_use]
    pub fn from_json(at_ms: u64, raw: Value) -> Self {
        let f = crate::assertions::decision::Fields::of(&raw);
        let s = |k: &str| f.text(k);
        let n = |k: &str| f.num(k);
        let addrs = s("addrs");
        Self {
            at_ms,
            message: s("message"),
            endpoint: s("endpoint"),
            addrs: addrs
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_owned)
                .collect(),
            ttl_ms: n("ttl_ms"),
            changed: f
                .get("changed")
                .and_then(|v| v.as_bool().or_else(|| v.as_str()?.parse().ok())),
            error: s("error"),
            failures: n("failures"),
            peer: s("peer"),
            result: s("result"),
            raw,
        }
    }

    /// Whether this probe was of the peer at `ip` (the probed `peer` is `IP:PORT`, or the
    /// bare address; IPv6 in brackets).
    #[must_use]
    pub fn is_probe_of(&self, ip: std::net::IpAddr) -> bool {
        let peer = self.peer.as_str();
        let host = peer
            .parse::<std::net::SocketAddr>()
            .map(|a| a.ip())
            .or_else(|_| peer.parse());
        self.message == PEER_PROBE && host.is_ok_and(|h| h == ip)
    }
}

impl Agent {
    /// Every endpoint event so far.
    #[must_use]
    pub fn endpoint_events(&self) -> Vec<EndpointEvent> {
        self.log()
            .into_iter()
            .filter(|(_, v)| v.get("target").and_then(Value::as_str) == Some("lifeline::endpoint"))
            .map(|(at, v)| EndpointEvent::from_json(at, v))
            .collect()
    }

    /// The endpoint events with this message.
    #[must_use]
    pub fn endpoint_events_with(&self, message: &str) -> Vec<EndpointEvent> {
        self.endpoint_events()
            .into_iter()
            .filter(|e| e.message == message)
            .collect()
    }

    /// The kill decisions about the client socket with local port `port`.
    #[must_use]
    pub fn kills_of(&self, port: u16) -> Vec<crate::assertions::decision::Decision> {
        self.decisions()
            .into_iter()
            .filter(|d| d.is_for_port(port) && d.action == "kill")
            .collect()
    }
}
