//! docs/BENCHMARKS.md: everything measured, as tables, with the machine and the command.
//! Text after the `<!-- analysis -->` marker of an existing file is kept: the reading of the
//! numbers is written by people, the numbers only by the bench. Sections of parts that run
//! on their own (`crate::sections`) are kept as they are.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::cells::Scenario;
use crate::contender::Contender;
use crate::cost::Cost;
use crate::matrix::{Cell, Plan};
use crate::scale::Scale;
use crate::stats::{secs, summarize};

const MARKER: &str = "<!-- analysis -->";

pub(crate) struct Doc<'a> {
    pub plan: &'a Plan,
    pub cells: &'a [Cell],
    pub busy_pct: f64,
    pub failures: Vec<String>,
    pub cost: Option<&'a Cost>,
    pub bpf: Option<&'a crate::costbpf::BpfCost>,
    pub usual: Option<&'a crate::usual::Usual>,
    pub scale: Option<&'a Scale>,
    pub elapsed: Duration,
    pub command: String,
}

pub(crate) fn write(path: &Path, d: &Doc) -> Result<()> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let kept = old.split_once(MARKER).map_or_else(
        || "\n## Analysis\n\n(none yet)\n".into(),
        |(_, a)| a.to_owned(),
    );
    // Parts run on their own (`--fleet`, `--soak`) keep their sections across this rewrite.
    let written: Vec<&str> = [
        (d.cost.is_some() || d.bpf.is_some(), "cost"),
        (d.scale.is_some(), "scale"),
    ]
    .into_iter()
    .filter_map(|(w, n)| w.then_some(n))
    .collect();
    let parts = crate::sections::all(&old, &written);
    let mut s = String::new();
    header(&mut s, d)?;
    s.push_str(&matrix_text(d)?);
    // The targets speak of every row: a run of a few rows leaves them to the full run.
    if !d.plan.is_subset() {
        crate::report_more::targets(&mut s, d.cells, d.cost)?;
    }
    for f in &d.failures {
        writeln!(s, "**Failed**: {}\n", f.replace('\n', " "))?;
    }
    if d.cost.is_some() || d.bpf.is_some() {
        let body = cost_section(d.cost, d.bpf, d.usual)?;
        writeln!(
            s,
            "<!-- part:cost -->\n{}\n<!-- end:cost -->\n",
            body.trim_end()
        )?;
    }
    if let Some(sc) = d.scale {
        let body = scale_section(sc)?;
        writeln!(
            s,
            "<!-- part:scale -->\n{}\n<!-- end:scale -->\n",
            body.trim_end()
        )?;
    }
    s.push_str(&parts);
    writeln!(s, "{MARKER}{kept}")?;
    std::fs::write(path, s)?;
    Ok(())
}

/// The workspace's commit, short, for the document.
pub(crate) fn commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(lifeline_tests::infra::paths::workspace())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn header(s: &mut String, d: &Doc) -> Result<()> {
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()?;
    writeln!(s, "# Benchmarks\n")?;
    writeln!(
        s,
        "Written by the bench itself (`bench/`), from the run of {}; the run took {:.1} min.\n",
        String::from_utf8_lossy(&date.stdout).trim(),
        d.elapsed.as_secs_f64() / 60.0
    )?;
    writeln!(
        s,
        "Command (as root, from the workspace): `{}`\n",
        d.command
    )?;
    writeln!(s, "Source (agent and bench): commit `{}`.\n", commit())?;
    writeln!(s, "Machine:\n")?;
    for line in crate::machine::describe() {
        writeln!(s, "- {line}")?;
    }
    writeln!(
        s,
        "\nEach trial is one kubelet-like client (`kube-client`: HTTP/2 to `api.lab.test:6443`, \
        resolved through the lab's dnsmasq, TTL 5 s; re-resolves and re-dials on error) in an endpoint lab \
        of its own namespaces. {}, labs of 1 to 10 clients (a lifeline trial \
        of a peer-gone scenario runs alone: the dead-peer kill covers every socket to the peer), {} labs side by side; a trial ends \
        when the client is back or after {} s (`> {}`). **Detection**: fault start to the client's \
        connection gone (its first error, or the dig script killing it). **Outage**: last good \
        heartbeat before the fault to the first good one on a new connection (for an idle watch, \
        from the fault to the first watch event on a new connection). The machine was {:.0} % \
        busy (all cores) while the labs ran.\n",
        d.plan.trials_text(),
        d.plan.workers,
        d.plan.cap.as_secs(),
        d.plan.cap.as_secs(),
        d.busy_pct
    )?;
    if d.plan.scenarios.contains(&Scenario::RestartedFlowOnly) {
        writeln!(
            s,
            "In the row \"{}\" the client is `kubelet.service` of a `systemd --user` manager of \
            its own (one per lab, so one trial per lab): it connects, the agent starts targeting exactly \
            that unit's cgroup (`--cgroup .../kubelet.service`, plus the endpoint and the lab's DNS), and \
            once the agent is ready the unit is restarted (`systemctl --user restart`: systemd deletes \
            the cgroup and makes a new one); the restarted client's new connection then gets the \
            flow-only black hole, measured as in the flow-only row. Only kernel defaults and lifeline \
            at its defaults run it: the restart changes which cgroup kubelet's sockets are born in, \
            which client options do not look at.\n",
            Scenario::RestartedFlowOnly.name()
        )?;
    }
    crate::report_blip::intro(s, d.plan)
}

/// The detection and outage tables (also printed by a run of a few rows).
pub(crate) fn matrix_text(d: &Doc) -> Result<String> {
    let mut s = String::new();
    matrix(&mut s, d)?;
    Ok(s)
}

fn matrix(s: &mut String, d: &Doc) -> Result<()> {
    // The blip rows have a section of their own (`report_blip`): nothing there is detected.
    if d.cells.iter().any(|c| c.scenario.blip().is_none()) {
        detection(s, d)?;
    }
    crate::report_blip::section(s, d.cells, d.plan.cap)
}

fn detection(s: &mut String, d: &Doc) -> Result<()> {
    writeln!(s, "## Detection and outage (seconds: p50 / p90 / max)\n")?;
    writeln!(
        s,
        "![outage per contender and scenario](bench-outage.svg)\n"
    )?;
    for scenario in Scenario::ALL.into_iter().filter(|s| s.blip().is_none()) {
        let cells: Vec<&Cell> = d.cells.iter().filter(|c| c.scenario == scenario).collect();
        if cells.is_empty() {
            continue;
        }
        writeln!(s, "### {}\n", scenario.name())?;
        writeln!(
            s,
            "| contender | trials | detection p50 | p90 | max | outage p50 | p90 | max | notes |"
        )?;
        writeln!(s, "|---|---|---|---|---|---|---|---|---|")?;
        for contender in Contender::ALL {
            let Some(c) = cells.iter().find(|c| c.contender == contender) else {
                continue;
            };
            let cap = d.plan.cap;
            let det = summarize(&c.trials.iter().map(|t| t.detection_ms).collect::<Vec<_>>());
            let out = summarize(&c.trials.iter().map(|t| t.outage_ms).collect::<Vec<_>>());
            let mut notes = crate::measure::merged(&c.agent_notes);
            notes.extend(
                c.errors
                    .iter()
                    .map(|e| format!("lab failed: {}", e.replace('\n', " "))),
            );
            writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                contender.name(),
                det.n,
                secs(det.p50, cap),
                secs(det.p90, cap),
                secs(det.max, cap),
                secs(out.p50, cap),
                secs(out.p90, cap),
                secs(out.max, cap),
                notes.join("; ")
            )?;
        }
        writeln!(s)?;
    }
    Ok(())
}

/// The cost section: throughput and CPU rounds, then each hook's runs, then their targets.
pub(crate) fn cost_section(
    cost: Option<&Cost>,
    bpf: Option<&crate::costbpf::BpfCost>,
    usual: Option<&crate::usual::Usual>,
) -> Result<String> {
    let mut s = String::new();
    if let Some(c) = cost {
        crate::report_cost::cost(&mut s, c)?;
    } else {
        writeln!(s, "## Cost\n")?;
    }
    if let Some(b) = bpf {
        crate::report_bpf::bpf(&mut s, b)?;
        crate::report_more::target_rows(&mut s, &crate::report_bpf::targets(b))?;
    }
    if let Some(u) = usual {
        crate::report_usual::usual(&mut s, u)?;
    }
    Ok(s)
}

/// The scale section, with its targets.
pub(crate) fn scale_section(sc: &Scale) -> Result<String> {
    let mut s = String::new();
    crate::report_more::scale(&mut s, sc)?;
    crate::report_more::target_rows(&mut s, &crate::report_more::scale_targets(sc))?;
    Ok(s)
}
