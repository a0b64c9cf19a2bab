//! One lab of one cell: an endpoint lab (api1..3, dnsmasq), the contender (an agent, client
//! options or the dig script), `k` kube-clients side by side, the scenario's fault, then a
//! bounded wait until every client is back or the cap is reached.

use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::kube::Connection;
use lifeline_tests::{Agent, ApiLab, api, mono_ms};

use crate::cells::{Contender, Scenario};
use crate::measure::{Slot, TrialResult};
use crate::script::DigScript;

/// What one lab runs.
#[derive(Clone, Copy, Debug)]
pub struct LabJob {
    pub scenario: Scenario,
    pub contender: Contender,
    pub clients: usize,
    pub cap: Duration,
}

/// What one lab measured, and what the agent did (for the report's notes).
pub struct LabOutcome {
    pub trials: Vec<TrialResult>,
    pub agent_notes: Vec<String>,
}

/// Runs the lab. Everything it creates is a guard dropped before it returns.
pub fn run(job: &LabJob) -> Result<LabOutcome> {
    let lab = ApiLab::new(&job.scenario.initial_dns())?;
    let agent = match job.contender.agent() {
        Some(args) => {
            let mut a = Agent::start_with(&lab.lab, &lab.cgroup, &args)?;
            a.wait_ready(Duration::from_mins(1))?;
            Some(a)
        }
        None => None,
    };
    let args = client_args(job);
    let mut slots = start_clients(&lab, job, &args)?;
    let mut script = (job.contender == Contender::DigScript).then(|| DigScript::new(&lab));
    // Strike at a random moment of the heartbeat cycle, as a real fault would: with a single
    // client the start-up stagger alone would always hit the same phase.
    let cycle = job.scenario.heartbeat().unwrap_or(Duration::from_secs(1));
    std::thread::sleep(Duration::from_millis(200) + cycle.mul_f64(random_unit()));
    inject(&lab, job.scenario, &mut slots)?;
    let last_fault = slots
        .iter()
        .map(|s| s.fault_ms)
        .max()
        .unwrap_or_else(mono_ms);
    let deadline = last_fault + u64::try_from(job.cap.as_millis())?;
    while mono_ms() < deadline && !slots.iter().all(|s| s.done(job.scenario)) {
        crate::pool::check_interrupted()?;
        if let Some(s) = script.as_mut() {
            s.tick(&lab, &args, &mut slots);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let trials = slots
        .iter()
        .map(|s| s.result(job.scenario, job.cap))
        .collect();
    let agent_notes = agent
        .as_ref()
        .map(crate::measure::agent_notes)
        .unwrap_or_default();
    drop(slots); // clients first, then the agent, then the lab's namespaces
    drop(agent);
    Ok(LabOutcome {
        trials,
        agent_notes,
    })
}

fn client_args(job: &LabJob) -> Vec<String> {
    let mut args = job.scenario.client_args();
    args.extend(job.contender.client_args());
    args
}

/// Starts the clients spread over one heartbeat interval, so their phases differ, and waits
/// for each one's first success (the "last good" before the fault needs one).
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
    let kind = crate::measure::success_kind(job.scenario);
    for s in &slots {
        s.gens[0].wait_event("a first success", Duration::from_secs(20), |e| {
            e.event == kind
        })?;
        let on: Option<Connection> = s.gens[0].current();
        anyhow::ensure!(
            on.is_some_and(|c| c.peer.ip() == api(1, false)),
            "a client is not on api1: {on:?}"
        );
    }
    Ok(slots)
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
        Scenario::FlowOnly | Scenario::IdleWatch => {
            for s in slots.iter_mut() {
                let port = s.gens[0].local_port().context("client port")?;
                s.fault_ms = mono_ms();
                let _rules = lab.lab.blackhole_flow(port)?;
            }
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

/// A uniform number in [0, 1) from the standard library's randomly keyed hasher.
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(mono_ms());
    #[expect(clippy::cast_precision_loss, reason = "53 random bits are plenty")]
    let x = (h.finish() >> 11) as f64 / (1u64 << 53) as f64;
    x
}
