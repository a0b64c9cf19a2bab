//! Turning a client's events into the two numbers of a trial. Detection: the fault's start to
//! the moment the client's connection is gone (its first error or end of stream, or the
//! dig script killing it). Outage: the last success before the fault (the fault itself for an
//! idle watch, which has no successes to lose) to the first success on a new connection.

use std::collections::BTreeMap;
use std::time::Duration;

use lifeline_tests::client::ClientEvent;
use lifeline_tests::kube::outage;
use lifeline_tests::{Agent, Client};

use crate::cells::Scenario;

/// One trial: the client and, when the dig script restarted it, its successors.
pub struct Slot {
    pub gens: Vec<Client>,
    pub fault_ms: u64,
    pub restarted_ms: Option<u64>,
}

/// Milliseconds; None: not within the cap.
#[derive(Clone, Copy, Debug)]
pub struct TrialResult {
    pub detection_ms: Option<u64>,
    pub outage_ms: Option<u64>,
}

/// The event that proves the client works: a heartbeat answered, or a watch event.
pub fn success_kind(scenario: Scenario) -> &'static str {
    if scenario.heartbeat().is_some() {
        "ok"
    } else {
        "watch-event"
    }
}

impl Slot {
    pub fn new(client: Client) -> Self {
        Self {
            gens: vec![client],
            fault_ms: 0,
            restarted_ms: None,
        }
    }

    /// Every generation's events, in time order.
    fn events(&self) -> Vec<ClientEvent> {
        let mut all: Vec<ClientEvent> = self.gens.iter().flat_map(Client::events).collect();
        all.sort_by_key(|e| e.mono_ms);
        all
    }

    /// Back: a success on a connection made after the fault.
    pub fn done(&self, scenario: Scenario) -> bool {
        outage(&self.events(), success_kind(scenario), self.fault_ms)
            .first_back
            .is_some()
    }

    pub fn result(&self, scenario: Scenario, cap: Duration) -> TrialResult {
        let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
        let within = |ms: u64| Some(ms).filter(|&m| m <= cap_ms);
        let failed = self.gens[0]
            .events()
            .into_iter()
            .find(|e| (e.event == "error" || e.event == "eof") && e.mono_ms >= self.fault_ms)
            .map(|e| e.mono_ms);
        let gone = [failed, self.restarted_ms].into_iter().flatten().min();
        let o = outage(&self.events(), success_kind(scenario), self.fault_ms);
        let outage_ms = if scenario.heartbeat().is_some() {
            o.ms()
        } else {
            o.first_back.map(|b| b.saturating_sub(self.fault_ms))
        };
        TrialResult {
            detection_ms: gone.and_then(|g| within(g.saturating_sub(self.fault_ms))),
            outage_ms: outage_ms.and_then(within),
        }
    }
}

/// What the agent decided, counted: `verdict/action/outcome x N`, for the report's notes
/// (a rate-limited or held kill explains a slow trial).
pub fn agent_notes(agent: &Agent) -> Vec<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for d in agent.decisions() {
        *counts
            .entry(format!("{}/{}/{}", d.verdict, d.action, d.outcome))
            .or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(k, n)| format!("{k} x{n}"))
        .collect()
}
