//! One lab of one cell: an endpoint lab (api1..3, dnsmasq), the contender (an agent, client
//! options or the dig script), `k` kube-clients side by side, the scenario's fault, then a
//! bounded wait until every client is back or the cap is reached (a blip row: the blip, its
//! heal and the watch after it, `crate::blip`). For the restarted row the
//! one kube-client is `kubelet.service` of a systemd manager, started before the agent and
//! restarted once it is ready, and the agent targets exactly that unit's cgroup.

use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::fixtures::kube::Connection;
use lifeline_tests::fixtures::kubelet_unit;
use lifeline_tests::{Agent, ApiLab, api, mono_ms};

use crate::cells::Scenario;
use crate::contender::Contender;
use crate::measure::{Slot, Source, TrialResult};
use crate::proxy_rows::Proxy;
use crate::script::DigScript;
use crate::stats::random_unit;

/// What one lab runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LabJob {
    pub scenario: Scenario,
    pub contender: Contender,
    pub clients: usize,
    pub cap: Duration,
}

/// What one lab measured, and what the agent did (for the report's notes).
pub(crate) struct LabOutcome {
    pub trials: Vec<TrialResult>,
    pub agent_notes: Vec<String>,
}

/// Runs the lab. Everything it creates is a guard dropped before it returns.
pub(crate) fn run(job: &LabJob) -> Result<LabOutcome> {
    let lab = ApiLab::new(&job.scenario.initial_dns())?;
    let proxy = Proxy::start(&lab, job.scenario)?;
    let mut args = client_args(job);
    if let Some(p) = &proxy {
        args.extend(p.client_args()?);
    }
    // kubelet.service runs before the agent starts, as on a node.
    let manager = if job.scenario.restarts_unit() {
        Some(crate::unit_rows::start_unit(&lab, &args)?)
    } else {
        None
    };
    let mut kubelet = None;
    let agent = match job.contender.agent() {
        Some(_) if proxy.is_some() => {
            let (k, a) = Proxy::agent(&lab)?;
            kubelet = Some(k);
            Some(a)
        }
        Some(agent_args) => {
            let target = manager
                .as_ref()
                .map_or_else(|| lab.cgroup.path().to_owned(), kubelet_unit::cgroup_dir);
            let mut a = Agent::start_targets(&lab.lab, &[&target], &agent_args)?;
            a.wait_ready(Duration::from_mins(1))?;
            Some(a)
        }
        None => None,
    };
    let mut slots = match manager {
        Some(m) => vec![crate::unit_rows::restart_unit(m)?],
        None => start_clients(&lab, job, &args)?,
    };
    check_started(job, &slots, proxy.is_some())?;
    let mut agent_notes = Vec::new();
    if let (Some(a), Some(Source::Unit { manager, .. })) =
        (&agent, slots.first().map(|s| &s.source))
    {
        agent_notes.push(crate::unit_rows::restarted_watched(a, manager, &slots[0]));
    }
    let mut script = (job.contender == Contender::DigScript).then(|| DigScript::new(&lab));
    // Strike at a random moment of the heartbeat cycle, as a real fault would: with a single
    // client the start-up stagger alone would always hit the same phase.
    let cycle = job.scenario.heartbeat().unwrap_or(Duration::from_secs(1));
    std::thread::sleep(Duration::from_millis(200) + cycle.mul_f64(random_unit()));
    let trials = if let Some(spec) = job.scenario.blip() {
        let watch = crate::blip::Watch {
            lab: &lab,
            args: &args,
            script: script.as_mut(),
            agent: agent.as_ref(),
            cap: job.cap,
        };
        crate::blip::strike(watch, spec, &mut slots)?
    } else {
        match &proxy {
            Some(p) => p.inject(&lab, &mut slots)?,
            None => inject(&lab, job.scenario, &mut slots)?,
        }
        until_back(&lab, job, &args, script.as_mut(), &mut slots)?
    };
    if let Some(a) = &agent {
        agent_notes.extend(crate::measure::agent_notes(a));
    }
    drop(slots); // clients (and a unit's manager) first, then the agent, then the namespaces
    drop(agent);
    drop(kubelet);
    Ok(LabOutcome {
        trials,
        agent_notes,
    })
}

/// Waits (bounded by the cap) until every client is back on a new connection, turning the
/// dig script meanwhile; each client's detection and outage.
fn until_back(
    lab: &ApiLab,
    job: &LabJob,
    args: &[String],
    mut script: Option<&mut DigScript>,
    slots: &mut [Slot],
) -> Result<Vec<TrialResult>> {
    let last_fault = slots
        .iter()
        .map(|s| s.fault_ms)
        .max()
        .unwrap_or_else(mono_ms);
    let deadline = last_fault + u64::try_from(job.cap.as_millis())?;
    while mono_ms() < deadline && !slots.iter().all(|s| s.done(job.scenario)) {
        crate::pool::check_interrupted()?;
        if let Some(s) = script.as_deref_mut() {
            s.tick(lab, args, slots);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(slots
        .iter()
        .map(|s| s.result(job.scenario, job.cap))
        .collect())
}

fn client_args(job: &LabJob) -> Vec<String> {
    let mut args = job.scenario.client_args();
    args.extend(job.contender.client_args());
    args
}

/// Starts the clients spread over one heartbeat interval, so their phases differ.
fn start_clients(lab: &ApiLab, job: &LabJob, args: &[String]) -> Result<Vec<Slot>> {
    let spread = job
        .scenario
        .heartbeat()
        .unwrap_or(Duration::from_millis(500));
    let gap = spread / u32::try_from(job.clients)?;
    let command: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut slots = Vec::new();
    for _ in 0..job.clients {
        slots.push(Slot::new(lab.kube_client(&command)?));
        std::thread::sleep(gap);
    }
    Ok(slots)
}

/// Waits for each client's first success (the "last good" before the fault needs one) and
/// checks it is on api1.
fn check_started(job: &LabJob, slots: &[Slot], via_proxy: bool) -> Result<()> {
    let on_first = |c: &Connection| {
        if via_proxy {
            c.peer == Proxy::client_peer()
        } else {
            c.peer.ip() == api(1, false)
        }
    };
    let kind = crate::measure::success_kind(job.scenario);
    for s in slots {
        s.wait_event("a first success", Duration::from_secs(20), |e| {
            e.event == kind
        })?;
        let on: Option<Connection> = s.connections().last().copied();
        anyhow::ensure!(
            on.as_ref().is_some_and(on_first),
            "a client is not on api1 (or its proxy): {on:?}"
        );
    }
    Ok(())
}

/// The scenario's fault; each slot records when its own fault began.
fn inject(lab: &ApiLab, scenario: Scenario, slots: &mut [Slot]) -> Result<()> {
    let now = mono_ms();
    match scenario {
        Scenario::PeerGone1s | Scenario::PeerGone10s => {
            let _rules = lab.lab.blackhole(api(1, false))?; // stays until the lab goes
            for s in slots.iter_mut() {
                s.fault_ms = now;
            }
        }
        Scenario::FlowOnly
        | Scenario::RestartedFlowOnly
        | Scenario::IdleWatch
        | Scenario::IdleWatchGo15
        | Scenario::IdleWatchNoKeepalive => {
            for s in slots.iter_mut() {
                let first = s.connections().first().map(|c| c.local_port);
                let port = first.context("client port")?;
                s.fault_ms = mono_ms();
                let _rules = lab.lab.blackhole_flow(port)?;
            }
        }
        Scenario::ProxyNginx | Scenario::ProxyHaproxy => {
            anyhow::bail!("{}: the proxy's own injection", scenario.name());
        }
        Scenario::Blip1s
        | Scenario::Blip3s
        | Scenario::Blip6s
        | Scenario::Blip15s
        | Scenario::BlipOneOfTwo3s => {
            anyhow::bail!("{}: the blip's own injection", scenario.name());
        }
        Scenario::ElbRotation => {
            // The balancer's old address goes silent as DNS moves to the new one.
            let _rules = lab.lab.blackhole(api(1, false))?;
            for s in slots.iter_mut() {
                s.fault_ms = now;
            }
            lab.dns.set(&[api(2, false)])?;
        }
    }
    Ok(())
}
