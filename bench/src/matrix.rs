//! The comparison matrix: every scenario against its contenders, `trials` each, split into
//! labs of a few clients that run side by side.

use std::time::{Duration, Instant};

use crate::cells::Scenario;
use crate::contender::Contender;
use crate::measure::TrialResult;
use crate::stats::{secs, summarize};
use crate::trial::{LabJob, run};

pub(crate) struct Cell {
    pub scenario: Scenario,
    pub contender: Contender,
    pub trials: Vec<TrialResult>,
    pub agent_notes: Vec<String>,
    pub errors: Vec<String>,
}

pub(crate) struct Plan {
    /// `--trials`; None: each scenario's default.
    pub trials: Option<usize>,
    pub quick: bool,
    pub cap: Duration,
    pub workers: usize,
    pub scenarios: Vec<Scenario>,
}

impl Plan {
    pub(crate) fn trials(&self, scenario: Scenario) -> usize {
        self.trials
            .unwrap_or_else(|| scenario.default_trials(self.quick))
    }

    /// Whether only some rows run (`--scenario`): no targets, no cost, no scale.
    pub(crate) fn is_subset(&self) -> bool {
        Scenario::ALL.iter().any(|s| !self.scenarios.contains(s))
    }

    /// "20 trials per cell", with the rows that run fewer named.
    pub(crate) fn trials_text(&self) -> String {
        let counts: Vec<usize> = self.scenarios.iter().map(|&s| self.trials(s)).collect();
        let most = counts
            .iter()
            .copied()
            .max_by_key(|n| counts.iter().filter(|m| *m == n).count())
            .unwrap_or(0);
        let others: Vec<String> = self
            .scenarios
            .iter()
            .zip(&counts)
            .filter(|(_, n)| **n != most)
            .map(|(s, n)| format!("{n} for \"{}\"", s.name()))
            .collect();
        if others.is_empty() {
            format!("{most} trials per cell")
        } else {
            format!("{most} trials per cell ({})", others.join(", "))
        }
    }
}

/// The labs of every cell; the slow ones (contenders that may sit out the whole cap) first,
/// so the queue ends with short labs and the workers finish together.
fn jobs(plan: &Plan) -> Vec<LabJob> {
    let mut jobs = Vec::new();
    for &scenario in &plan.scenarios {
        for &contender in scenario.contenders() {
            let k = scenario.clients_per_lab(contender, plan.quick);
            let mut left = plan.trials(scenario);
            while left > 0 {
                let clients = left.min(k);
                jobs.push(LabJob {
                    scenario,
                    contender,
                    clients,
                    cap: plan.cap,
                });
                left -= clients;
            }
        }
    }
    jobs.sort_by_key(|j| j.contender.agent().is_some());
    jobs
}

/// Runs every lab; returns the cells and how busy the machine was meanwhile (% of all cores),
/// the evidence that the labs side by side did not starve each other.
pub(crate) fn run_matrix(plan: &Plan) -> (Vec<Cell>, f64) {
    let busy0 = crate::procstat::machine_busy_s().unwrap_or(0.0);
    let jobs = jobs(plan);
    let total = jobs.len();
    let start = Instant::now();
    let mut finished = 0;
    println!(
        "matrix: {total} labs ({}), {} at a time, cap {} s",
        plan.trials_text(),
        plan.workers,
        plan.cap.as_secs()
    );
    let results = crate::pool::run_all(jobs, plan.workers, run, |job, r| {
        finished += 1;
        let t = start.elapsed().as_secs();
        let what = match r {
            Ok(o) if job.scenario.blip().is_some() => crate::blip_stats::summarize_blips(&o.trials)
                .map_or_else(|| "no trials".into(), |b| b.progress(job.cap)),
            Ok(o) => {
                let d: Vec<_> = o.trials.iter().map(|t| t.detection_ms).collect();
                let out: Vec<_> = o.trials.iter().map(|t| t.outage_ms).collect();
                let (d, out) = (summarize(&d), summarize(&out));
                format!(
                    "{} trials, detection p50 {} s, outage p50 {} s, max {} s",
                    o.trials.len(),
                    secs(d.p50, job.cap),
                    secs(out.p50, job.cap),
                    secs(out.max, job.cap)
                )
            }
            Err(e) => format!("FAILED: {e:#}"),
        };
        println!(
            "[{finished:>3}/{total} {:>2}m{:02}s] {} x {}: {what}",
            t / 60,
            t % 60,
            job.scenario.short(),
            job.contender.name()
        );
    });
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let busy = crate::procstat::machine_busy_s().unwrap_or(0.0) - busy0;
    #[expect(clippy::cast_precision_loss, reason = "a core count")]
    let busy_pct = busy / start.elapsed().as_secs_f64().max(1.0) / cores as f64 * 100.0;
    let mut cells: Vec<Cell> = Vec::new();
    for (job, r) in results {
        let found = cells
            .iter()
            .position(|c| c.scenario == job.scenario && c.contender == job.contender);
        let i = found.unwrap_or_else(|| {
            cells.push(Cell {
                scenario: job.scenario,
                contender: job.contender,
                trials: Vec::new(),
                agent_notes: Vec::new(),
                errors: Vec::new(),
            });
            cells.len() - 1
        });
        match r {
            Ok(o) => {
                cells[i].trials.extend(o.trials);
                cells[i].agent_notes.extend(o.agent_notes);
            }
            Err(e) => cells[i].errors.push(format!("{e:#}")),
        }
    }
    (cells, busy_pct)
}
