//! `lifeline status --json`, typed just enough for assertions (docs/INTERFACES.md).

use anyhow::{Context, Result};
use serde_json::Value;

pub use crate::assertions::status_endpoint::EndpointStatus;

/// The whole status answer.
#[derive(Clone, Debug)]
pub struct Status {
    pub stall_timeout_ms: u64,
    pub kills: u64,
    pub sockets: Vec<StatusSocket>,
    /// The followed endpoints (empty when the agent follows none, or predates them).
    pub endpoints: Vec<EndpointStatus>,
    /// Each watch target: `(target, state)`, e.g. `("cgroup /x/kubelet.service", "waiting")`.
    pub targets: Vec<(String, String)>,
    /// Where they came from ("kubelet pid N --kubeconfig FILE", "--endpoint", ...).
    pub endpoint_source: Option<String>,
    /// What the agent could not keep, and the connects it skipped (all 0 when absent).
    pub capacity: Capacity,
}

/// `sockets_full` and the `capacity` object: counts since the agent started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capacity {
    pub sockets_full: u64,
    pub owners_skipped: u64,
    pub endpoint_quota_full: u64,
    pub news_lost: u64,
    pub inbox_dropped: u64,
}

impl Capacity {
    fn from_json(v: &Value) -> Self {
        let n = |k: &str| {
            v.pointer(&format!("/capacity/{k}"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        Self {
            sockets_full: v.get("sockets_full").and_then(Value::as_u64).unwrap_or(0),
            owners_skipped: n("owners_skipped"),
            endpoint_quota_full: n("endpoint_quota_full"),
            news_lost: n("news_lost"),
            inbox_dropped: n("inbox_dropped"),
        }
    }
}

/// One watched socket as the agent sees it.
#[derive(Clone, Debug)]
pub struct StatusSocket {
    pub local: String,
    pub peer: String,
    pub verdict: String,
    /// The kernel's TCP state at the request ("ESTABLISHED", "FIN-WAIT-1", ...).
    pub state: Option<String>,
    /// "no owner" (no process holds the socket) or "exited"; None while its owner holds it.
    pub owner_state: Option<String>,
    pub source: String,
    /// Why an adopted socket is polled through `sock_diag` (its callbacks not armed).
    pub polled: Option<String>,
    pub last_ack_age_ms: u64,
    pub trouble_age_ms: Option<u64>,
    pub unacked_segs: u64,
    pub unacked_bytes: u64,
    pub retransmits: u64,
    /// Keepalive in force ("1s,1s,20"), "off", or why it is not armed.
    pub keepalive: String,
    /// Whether the peer is in its endpoint's set: "in-set", "leaving", "orphaned", "unknown";
    /// None when the socket belongs to no followed endpoint (or the agent predates endpoints).
    pub endpoint_member: Option<String>,
    pub owner_pid: Option<u64>,
    pub owner_comm: Option<String>,
    /// "cgroup", "comm", "endpoint": which targets selected it.
    pub watched_by: Vec<String>,
    pub raw: Value,
}

impl Status {
    /// # Errors
    /// When a documented field is missing or has the wrong type.
    pub fn from_json(v: &Value) -> Result<Self> {
        let n = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .with_context(|| format!("status lacks {k}: {v}"))
        };
        let socks = v
            .get("sockets")
            .and_then(Value::as_array)
            .with_context(|| format!("status lacks sockets: {v}"))?;
        Ok(Self {
            stall_timeout_ms: n("stall_timeout_ms")?,
            kills: n("kills")?,
            sockets: socks
                .iter()
                .map(StatusSocket::from_json)
                .collect::<Result<_>>()?,
            endpoints: match v.get("endpoints").and_then(Value::as_array) {
                Some(eps) => eps
                    .iter()
                    .map(EndpointStatus::from_json)
                    .collect::<Result<_>>()?,
                None => Vec::new(),
            },
            targets: v
                .get("targets")
                .and_then(Value::as_array)
                .map(|ts| {
                    ts.iter()
                        .filter_map(|t| {
                            Some((
                                t.get("target")?.as_str()?.to_owned(),
                                t.get("state")?.as_str()?.to_owned(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            endpoint_source: v
                .get("endpoint_source")
                .and_then(Value::as_str)
                .map(str::to_owned),
            capacity: Capacity::from_json(v),
        })
    }

    /// The state of the target whose name ends with `suffix` (e.g. `kubelet.service`).
    #[must_use]
    pub fn target_state(&self, suffix: &str) -> Option<&str> {
        self.targets
            .iter()
            .find(|(t, _)| t.ends_with(suffix))
            .map(|(_, s)| s.as_str())
    }

    /// The status of endpoint `NAME:PORT`.
    #[must_use]
    pub fn endpoint(&self, endpoint: &str) -> Option<&EndpointStatus> {
        self.endpoints.iter().find(|e| e.endpoint == endpoint)
    }

    /// Every socket whose local address ends with `:PORT` (one, unless something is wrong).
    #[must_use]
    pub fn sockets_for_port(&self, local_port: u16) -> Vec<&StatusSocket> {
        let suffix = format!(":{local_port}");
        self.sockets
            .iter()
            .filter(|s| s.local.ends_with(&suffix))
            .collect()
    }

    /// The socket whose local address ends with `:PORT`.
    #[must_use]
    pub fn socket_for_port(&self, local_port: u16) -> Option<&StatusSocket> {
        let suffix = format!(":{local_port}");
        self.sockets.iter().find(|s| s.local.ends_with(&suffix))
    }
}

impl StatusSocket {
    fn from_json(v: &Value) -> Result<Self> {
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .with_context(|| format!("socket lacks {k}: {v}"))
        };
        let n = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .with_context(|| format!("socket lacks {k}: {v}"))
        };
        Ok(Self {
            local: s("local")?,
            peer: s("peer")?,
            verdict: s("verdict")?,
            state: v.get("state").and_then(Value::as_str).map(str::to_owned),
            owner_state: v
                .get("owner_state")
                .and_then(Value::as_str)
                .map(str::to_owned),
            source: s("source")?,
            polled: v.get("polled").and_then(Value::as_str).map(str::to_owned),
            last_ack_age_ms: n("last_ack_age_ms")?,
            trouble_age_ms: v.get("trouble_age_ms").and_then(Value::as_u64),
            unacked_segs: n("unacked_segs")?,
            unacked_bytes: n("unacked_bytes")?,
            retransmits: n("retransmits")?,
            keepalive: s("keepalive")?,
            endpoint_member: v
                .get("endpoint_member")
                .and_then(Value::as_str)
                .map(str::to_owned),
            owner_pid: v.get("owner_pid").and_then(Value::as_u64),
            owner_comm: v
                .get("owner_comm")
                .and_then(Value::as_str)
                .map(str::to_owned),
            watched_by: v
                .get("watched_by")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            raw: v.clone(),
        })
    }

    /// The agent shows trouble with evidence: stalled/suspect and something to back it.
    #[must_use]
    pub fn shows_trouble_with_evidence(&self) -> bool {
        matches!(self.verdict.as_str(), "stalled" | "suspect")
            && (self.trouble_age_ms.unwrap_or(0) > 0
                || self.unacked_segs > 0
                || self.unacked_bytes > 0)
    }
}
