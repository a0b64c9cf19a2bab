//! A readable timeline for the demo: times relative to the fault, printed as they happen.

use std::collections::BTreeSet;

use crate::fixtures::agent::Agent;
use crate::fixtures::client::{Client, ClientEvent};
use crate::infra::util::mono_ms;

/// How long an item waits before it is printed, for late log lines to sort in.
const SETTLE_MS: u64 = 300;
use crate::assertions::decision::Decision;

/// Prints lines stamped `+12.3 s` relative to the moment the fault began.
pub struct Timeline {
    origin_ms: u64,
    printed: BTreeSet<(u64, String)>,
}

impl Timeline {
    #[must_use]
    pub fn new(origin_ms: u64) -> Self {
        Self {
            origin_ms,
            printed: BTreeSet::new(),
        }
    }

    /// Seconds since the fault (negative before it).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn rel(&self, at_ms: u64) -> f64 {
        (at_ms as f64 - self.origin_ms as f64) / 1000.0
    }

    /// Prints one line at `at_ms`.
    pub fn say(&self, at_ms: u64, text: &str) {
        println!("  {:>+7.1} s  {text}", self.rel(at_ms));
    }

    /// Prints the client events and agent decisions after the fault not printed yet, in
    /// time order. Heartbeats are summarised: only the first good one after a failure shows.
    /// Items younger than `SETTLE_MS` wait for the next call (or `flush`), so a log line
    /// that arrives late still sorts before what happened after it.
    pub fn catch_up(&mut self, client: &Client, agent: Option<&Agent>) {
        self.print(client, agent, mono_ms().saturating_sub(SETTLE_MS));
    }

    /// Prints everything pending, however young.
    pub fn flush(&mut self, client: &Client, agent: Option<&Agent>) {
        self.print(client, agent, u64::MAX);
    }

    fn print(&mut self, client: &Client, agent: Option<&Agent>, until_ms: u64) {
        // Decisions first: on a tie the kill came before the client noticed it.
        let mut items: Vec<(u64, String)> = agent
            .map(Agent::decisions)
            .unwrap_or_default()
            .iter()
            .map(|d| (d.logged_ms.unwrap_or(d.at_ms), describe_decision(d)))
            .collect();
        let mut failed = false;
        for e in client
            .events()
            .iter()
            .filter(|e| e.mono_ms >= self.origin_ms)
        {
            let text = match e.event.as_str() {
                "ok" if failed => Some("first good heartbeat after the fault".to_owned()),
                "error" | "eof" => Some(describe_error(e)),
                "redialed" => Some(format!(
                    "client re-dialed: new connection from port {}",
                    port(e)
                )),
                _ => None,
            };
            match e.event.as_str() {
                "error" | "eof" => failed = true,
                "ok" => failed = false,
                _ => {}
            }
            items.extend(text.map(|t| (e.mono_ms, t)));
        }
        items.sort_by_key(|(at, _)| *at); // stable: ties keep the order above
        for item in items.into_iter().filter(|(at, _)| *at <= until_ms) {
            if self.printed.insert(item.clone()) {
                self.say(item.0, &item.1);
            }
        }
    }
}

fn port(e: &ClientEvent) -> String {
    e.local_port.map_or_else(|| "?".into(), |p| p.to_string())
}

fn describe_error(e: &ClientEvent) -> String {
    let op = e.raw["op"].as_str().unwrap_or("read");
    let what = e
        .error
        .clone()
        .unwrap_or_else(|| "connection closed by the peer".into());
    format!("client noticed: {op} failed: {what}")
}

#[allow(clippy::cast_precision_loss)]
fn describe_decision(d: &Decision) -> String {
    let age = d
        .last_ack_age_ms
        .map_or_else(|| "?".into(), |ms| format!("{:.1} s", ms as f64 / 1000.0));
    let unacked = d
        .unacked_bytes
        .map_or_else(|| "?".into(), |b| b.to_string());
    let rtx = d.retransmits.map_or_else(|| "?".into(), |r| r.to_string());
    format!(
        "lifeline: {} {} -> {}, action {} ({}): no ACK for {age}, {unacked} bytes unacked, {rtx} retransmits",
        d.verdict, d.local, d.peer, d.action, d.outcome
    )
}

/// The last good heartbeat before `fault_ms`, and the first good one after the last failure
/// (by order of the events: a re-dial on the same host can land in the same millisecond).
#[must_use]
pub fn outage(events: &[ClientEvent], fault_ms: u64) -> (Option<u64>, Option<u64>) {
    let last_good = events
        .iter()
        .filter(|e| e.event == "ok" && e.mono_ms <= fault_ms)
        .map(|e| e.mono_ms)
        .max();
    let is_fail = |e: &ClientEvent| e.event == "error" || e.event == "eof";
    let first_back = events.iter().rposition(is_fail).and_then(|i| {
        events[i..]
            .iter()
            .find(|e| e.event == "ok")
            .map(|e| e.mono_ms)
    });
    (last_good, first_back)
}
