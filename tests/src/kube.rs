//! Reading a `kube-client`'s events: which connection it is on, and how long its requests
//! were failing (the outage an operator would see as a `NotReady` node).

use std::net::SocketAddr;

use crate::client::{Client, ClientEvent};

/// One connection the client made: when, to whom, from which local port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    pub mono_ms: u64,
    pub peer: SocketAddr,
    pub local_port: u16,
}

impl Client {
    /// Every connection so far, in order (`connected` events).
    #[must_use]
    pub fn connections(&self) -> Vec<Connection> {
        connections(&self.events())
    }

    /// The connection it is on now (the latest one).
    #[must_use]
    pub fn current(&self) -> Option<Connection> {
        self.connections().last().copied()
    }

    /// Successful requests (`ok` for heartbeats, `watch-event` for the stream) after `ms`.
    #[must_use]
    pub fn successes_after(&self, ms: u64, kind: &str) -> Vec<ClientEvent> {
        self.events()
            .into_iter()
            .filter(|e| e.event == kind && e.mono_ms > ms)
            .collect()
    }
}

/// Every connection in a client's events (`connected`), in order: also for a client whose
/// events are read from elsewhere (a systemd unit's output, `kubelet_unit::events`).
#[must_use]
pub fn connections(events: &[ClientEvent]) -> Vec<Connection> {
    events
        .iter()
        .filter(|e| e.event == "connected")
        .filter_map(|e| {
            Some(Connection {
                mono_ms: e.mono_ms,
                peer: e.raw.get("peer")?.as_str()?.parse().ok()?,
                local_port: e.local_port?,
            })
        })
        .collect()
}

/// The outage around a fault at `fault_ms`, from the client's events of kind `kind`
/// (`ok` or `watch-event`): the last success at or before the fault, and the first success
/// after it on a connection made after the fault (None: not back yet).
#[must_use]
pub fn outage(events: &[ClientEvent], kind: &str, fault_ms: u64) -> Outage {
    let last_good = events
        .iter()
        .filter(|e| e.event == kind && e.mono_ms <= fault_ms)
        .map(|e| e.mono_ms)
        .max();
    // Back means: a new connection, then a success on it. A success still trickling in on
    // the old connection in the first instants after the fault does not end the outage.
    let reconnect = events
        .iter()
        .position(|e| e.event == "connected" && e.mono_ms > fault_ms);
    let first_back = reconnect.and_then(|i| {
        events[i..]
            .iter()
            .find(|e| e.event == kind)
            .map(|e| e.mono_ms)
    });
    Outage {
        fault_ms,
        last_good,
        first_back,
    }
}

/// What `outage` found.
#[derive(Clone, Copy, Debug)]
pub struct Outage {
    pub fault_ms: u64,
    pub last_good: Option<u64>,
    pub first_back: Option<u64>,
}

impl Outage {
    /// Milliseconds without a success: last good before the fault to first good after it.
    /// None while the client is not back.
    #[must_use]
    pub fn ms(&self) -> Option<u64> {
        Some(
            self.first_back?
                .saturating_sub(self.last_good.unwrap_or(self.fault_ms)),
        )
    }
}
