//! Turning a client's events into the two numbers of a trial. Detection: the fault's start to
//! the moment the client's connection is gone (its first error or end of stream, or the
//! dig script killing it). Outage: the last success before the fault (the fault itself for an
//! idle watch, which has no successes to lose) to the first success on a new connection.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::fixtures::client::ClientEvent;
use lifeline_tests::fixtures::kube::{Connection, connections, outage};
use lifeline_tests::fixtures::kubelet_unit;
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::{Agent, Client, wait_until};

use crate::cells::Scenario;

/// One trial: the client and, when the dig script restarted it, its successors; or the
/// client of a `kubelet.service` unit.
pub(crate) struct Slot {
    pub source: Source,
    pub fault_ms: u64,
    pub restarted_ms: Option<u64>,
}

/// Where a trial's client runs.
pub(crate) enum Source {
    /// Started by the bench; after the first, the dig script's restarts of it.
    Procs(Vec<Client>),
    /// `kubelet.service` of its own manager (dropped with the slot: the unit stops and the
    /// manager's cgroups go). Its events are read from the unit's output: the process
    /// restarted at `since_ms`.
    Unit {
        manager: Box<UserManager>,
        since_ms: u64,
    },
}

/// Milliseconds; None: not within the cap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TrialResult {
    pub detection_ms: Option<u64>,
    pub outage_ms: Option<u64>,
    /// A blip row's numbers (`crate::blip`); None for the rows whose fault stays.
    pub blip: Option<BlipTrial>,
}

/// What one client lived through in a blip row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlipTrial {
    /// The blip's start to the client's first success after it; None: not within the cap.
    pub served_again_ms: Option<u64>,
    /// Connections the client made after the blip began: each replaced one that would have
    /// recovered by itself (a fleet's reconnects per node per blip).
    pub redials: u32,
    /// lifeline's kills of the client's sockets.
    pub kills: u32,
    /// Sessions the client's own defence ended (`TCP_USER_TIMEOUT`'s `ETIMEDOUT`, the HTTP/2
    /// PING's timeout): every failure but lifeline's `ECONNABORTED`.
    pub own_closes: u32,
    /// The dig script's restarts of the client.
    pub restarts: u32,
}

/// The event that proves the client works: a heartbeat answered, or a watch event.
pub(crate) fn success_kind(scenario: Scenario) -> &'static str {
    if scenario.heartbeat().is_some() {
        "ok"
    } else {
        "watch-event"
    }
}

impl Slot {
    pub(crate) fn new(client: Client) -> Self {
        Self::of(Source::Procs(vec![client]))
    }

    pub(crate) fn of(source: Source) -> Self {
        Self {
            source,
            fault_ms: 0,
            restarted_ms: None,
        }
    }

    /// Every generation's events, in time order.
    pub(crate) fn events(&self) -> Vec<ClientEvent> {
        match &self.source {
            Source::Procs(gens) => {
                let mut all: Vec<ClientEvent> = gens.iter().flat_map(Client::events).collect();
                all.sort_by_key(|e| e.mono_ms);
                all
            }
            Source::Unit { .. } => self.first_events(),
        }
    }

    /// How many times the dig script restarted the client (its generations after the first).
    pub(crate) fn restarts(&self) -> usize {
        match &self.source {
            Source::Procs(gens) => gens.len().saturating_sub(1),
            Source::Unit { .. } => 0,
        }
    }

    /// The events of the client that met the fault (its first generation).
    fn first_events(&self) -> Vec<ClientEvent> {
        match &self.source {
            Source::Procs(gens) => gens.first().map(Client::events).unwrap_or_default(),
            Source::Unit { manager, since_ms } => {
                // The restarted process's events begin with its first connection: the old
                // one, until systemd stopped it, could only report more heartbeats.
                let all = kubelet_unit::events(manager);
                let new = all
                    .iter()
                    .position(|e| e.mono_ms >= *since_ms && e.event == "connected");
                new.map(|i| all[i..].to_vec()).unwrap_or_default()
            }
        }
    }

    /// The connections of the client that met the fault, oldest first.
    pub(crate) fn connections(&self) -> Vec<Connection> {
        connections(&self.first_events())
    }

    /// Waits (bounded) for the first client's event matching `pred`.
    pub(crate) fn wait_event(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&ClientEvent) -> bool,
    ) -> Result<ClientEvent> {
        if let Source::Procs(gens) = &self.source
            && let Some(client) = gens.first()
        {
            return client.wait_event(what, timeout, pred); // with the client's stderr
        }
        wait_until(what, timeout, Duration::from_millis(20), || {
            Ok(self.first_events().into_iter().find(&pred))
        })
        .with_context(|| {
            let seen: Vec<String> = self
                .first_events()
                .iter()
                .map(|e| e.raw.to_string())
                .collect();
            format!("client events: {}", seen.join("\n"))
        })
    }

    /// Back: a success on a connection made after the fault.
    pub(crate) fn done(&self, scenario: Scenario) -> bool {
        outage(&self.events(), success_kind(scenario), self.fault_ms)
            .first_back
            .is_some()
    }

    pub(crate) fn result(&self, scenario: Scenario, cap: Duration) -> TrialResult {
        let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
        let within = |ms: u64| Some(ms).filter(|&m| m <= cap_ms);
        let failed = self
            .first_events()
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
            blip: None,
        }
    }
}

/// What the agent decided, counted: `verdict/action/outcome x N`, for the report's notes
/// (a rate-limited or held kill explains a slow trial).
pub(crate) fn agent_notes(agent: &Agent) -> Vec<String> {
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

/// The agent's decision counts over all labs of a cell: `verdict/action/outcome xN` summed.
pub(crate) fn merged(notes: &[String]) -> Vec<String> {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for n in notes {
        if let Some((what, k)) = n.rsplit_once(" x") {
            *counts.entry(what).or_default() += k.parse::<usize>().unwrap_or(0);
        }
    }
    counts
        .into_iter()
        .map(|(w, k)| format!("agent: {w} x{k}"))
        .collect()
}
