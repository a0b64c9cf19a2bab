//! The shipped alert rules in a real Prometheus (Debian's `prometheus`, started in the lab's
//! client namespace by the test) that scrapes a running agent every second, with every
//! duration of the rules divided by 60 (`lifeline_tests::infra::prometheus::scaled_rules`):
//!
//! - a black hole is killed: `LifelineKilledConnection` is active within two scrape intervals
//!   of the kill, and no other alert went pending or firing at any evaluation (Prometheus'
//!   own `ALERTS` series over the whole run);
//! - the guard holds (the endpoint's only address is black-holed): `LifelineHolding` goes
//!   pending, then firing, and nothing else does.
//!
//! The first also checks the Grafana dashboard and the rules against a real scrape: every
//! metric name their queries use is one the agent exposes (test d of issue 36).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::endpoint_checks::holds_of;
use lifeline_tests::assertions::metrics::scrape;
use lifeline_tests::infra::paths::workspace;
use lifeline_tests::infra::prometheus::{INTERVAL, Prometheus, scaled_rules};
use lifeline_tests::scenarios::endpoint_scenario::{agent_resolved, watched_on};
use lifeline_tests::scenarios::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::{Agent, AgentArgs, ApiLab, api, mono_ms, require_root, wait_until};
use serde_json::Value;

const METRICS: &str = "127.0.0.1:9464";

fn rules() -> Result<String> {
    let path = workspace().join("packaging/prometheus/lifeline-rules.yaml");
    scaled_rules(&std::fs::read_to_string(&path).context("the shipped rules")?)
}

/// Once Prometheus has scraped the agent, two more intervals, so that nothing of the start
/// (no `up` series before the first scrape) counts; the quiet window starts then.
fn warm(p: &Prometheus) -> Result<u64> {
    p.wait_scraped()?;
    std::thread::sleep(INTERVAL * 2);
    Ok(mono_ms())
}

/// Every (alert, state) that was pending or firing at any evaluation since `since_ms`
/// (Prometheus' `ALERTS` series: one sample per evaluation per active alert).
fn active_since(p: &Prometheus, since_ms: u64) -> Result<BTreeSet<(String, String)>> {
    let secs = (mono_ms() - since_ms).div_ceil(1000).max(1);
    let q = format!("/api/v1/query?query=max_over_time(ALERTS%5B{secs}s%5D)");
    let data = p.api(&q)?;
    let list = data["result"].as_array().context("no result")?;
    Ok(list
        .iter()
        .map(|r| {
            let m = &r["metric"];
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            (s("alertname"), s("alertstate"))
        })
        .collect())
}

#[test]
fn a_kill_fires_the_kill_alert_and_nothing_else() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let client = s.heartbeat_client(&[])?;
    let addr: SocketAddr = METRICS.parse()?;
    let args = AgentArgs {
        extra: vec!["--metrics-addr".into(), METRICS.into()],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let prometheus = Prometheus::start(&s.lab.client, addr, &rules()?)?;
    let quiet_from = warm(&prometheus)?;
    ensure!(
        prometheus.alerts()?.is_empty(),
        "alerts before any fault: {:?}",
        prometheus.alerts()?
    );

    let report = blackhole_until_killed(&s, &agent, &client, Duration::from_secs(4))?;
    let killed_ms = report
        .decision
        .logged_ms
        .context("the kill's decision has no timestamp")?;
    let alert = wait_until(
        "LifelineKilledConnection",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || {
            Ok(prometheus
                .alerts()?
                .into_iter()
                .find(|a| a.name == "LifelineKilledConnection"))
        },
    )?;
    // The kill is counted beside its decision event; the next scrape (within one interval)
    // carries it and the next evaluation (within another) fires. 500 ms for the log's and
    // the scrape's own timing.
    let after = alert.active_ms.saturating_sub(killed_ms);
    eprintln!("kill logged at {killed_ms} ms, alert active {after} ms later: {alert:?}");
    ensure!(
        alert.active_ms + 1000 >= killed_ms
            && u128::from(after) <= (INTERVAL * 2).as_millis() + 500,
        "LifelineKilledConnection active {after} ms after the kill: {alert:?}"
    );
    ensure!(
        alert.state == "firing",
        "no `for:`, so firing at once: {alert:?}"
    );
    std::thread::sleep(INTERVAL * 3);
    let active = active_since(&prometheus, quiet_from)?;
    let names: BTreeSet<&str> = active.iter().map(|(n, _)| n.as_str()).collect();
    ensure!(
        names == BTreeSet::from(["LifelineKilledConnection"]),
        "alerts active during the run: {active:?}"
    );

    let (_, _, text) = scrape(&s.lab.client.path(), addr)?;
    names_in_scrape_cover_the_queries(&text)
}

/// The metric names a scrape exposes: every sample's, and every family's from its `# TYPE`
/// line (a labelled family with no sample yet, such as restarts without a restart, is still
/// declared): a counter's `_total`, a histogram's `_bucket`, `_sum` and `_count`.
fn exposed(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("# TYPE ") {
            let mut w = t.split_whitespace();
            let (Some(name), Some(kind)) = (w.next(), w.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            out.extend(suffixes.iter().map(|s| format!("{name}{s}")));
        } else if !line.starts_with('#') {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            out.insert(line[..end].to_owned());
        }
    }
    out
}

/// `lifeline_*` names in a query.
fn used(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = query;
    while let Some(at) = rest.find("lifeline_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    out
}

/// Every query string in the dashboard: panel targets and template variables.
fn dashboard_queries(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr" | "query" | "definition", Value::String(q)) => out.push(q.clone()),
                    _ => dashboard_queries(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| dashboard_queries(x, out)),
        _ => {}
    }
}

fn names_in_scrape_cover_the_queries(text: &str) -> Result<()> {
    let exposed = exposed(text);
    let path = workspace().join("packaging/grafana/lifeline-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let mut queries = Vec::new();
    dashboard_queries(&dashboard, &mut queries);
    let panels = dashboard["panels"].as_array().context("no panels")?;
    for p in panels.iter().filter(|p| p["type"] != "row") {
        ensure!(
            p["targets"].as_array().is_some_and(|t| !t.is_empty()),
            "panel {} has no query",
            p["title"]
        );
    }
    let rules =
        std::fs::read_to_string(workspace().join("packaging/prometheus/lifeline-rules.yaml"))?;
    let rule_queries = rules
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("expr:"))
        .map(str::to_owned);
    let mut checked = BTreeSet::new();
    for (from, q) in queries
        .iter()
        .map(|q| ("dashboard", q.clone()))
        .chain(rule_queries.map(|q| ("rules", q)))
    {
        for name in used(&q) {
            ensure!(
                exposed.contains(&name),
                "{from} query uses {name}, which the agent does not expose: {q}\nexposed: {exposed:?}"
            );
            checked.insert(name);
        }
    }
    eprintln!(
        "{} metric names of the dashboard and the rules found in a real scrape",
        checked.len()
    );
    ensure!(checked.len() >= 15, "too few names checked: {checked:?}");
    Ok(())
}

#[test]
fn a_hold_fires_the_holding_alert_and_nothing_else() -> Result<()> {
    require_root();
    let only = [api(1, false)];
    let l = ApiLab::new(&only)?;
    let args = ApiLab::agent_args(Some("4s"), &["--metrics-addr", METRICS]);
    let agent = agent_resolved(&l, &args, &only)?;
    let c = l.kube_client(&[])?;
    let conn = watched_on(&agent, &c, api(1, false), "ok")?;
    let prometheus = Prometheus::start(&l.lab.client, METRICS.parse()?, &rules()?)?;
    let quiet_from = warm(&prometheus)?;

    let _fault = l.lab.blackhole(api(1, false))?;
    let fault_ms = mono_ms();
    // Pending from the first hold decision (the agent exposes the hold series at 0 from
    // its start), firing once `for: 5m` (5 s here) has passed while the guard keeps holding
    // (it re-checks after 1, 2, 4 ... s).
    let firing = wait_until(
        "LifelineHolding firing",
        Duration::from_secs(40),
        Duration::from_millis(200),
        || {
            Ok(prometheus
                .alerts()?
                .into_iter()
                .find(|a| a.name == "LifelineHolding" && a.state == "firing"))
        },
    )
    .with_context(|| format!("decisions: {:?}", agent.decisions()))?;
    let holds = holds_of(&agent, conn.local_port);
    let first = holds
        .first()
        .and_then(|h| h.logged_ms)
        .context("firing without a logged hold")?;
    eprintln!(
        "{} holds, the first {} ms after the fault; LifelineHolding active {} ms after it",
        holds.len(),
        first.saturating_sub(fault_ms),
        firing.active_ms.saturating_sub(first)
    );
    let (_, _, text) = scrape(&l.lab.client.path(), METRICS.parse()?)?;
    names_in_scrape_cover_the_queries(&text)?;
    // Active (pending) within two scrape intervals of the first hold, as the kill alert.
    let after = firing.active_ms.saturating_sub(first);
    ensure!(
        firing.active_ms + 1000 >= first && u128::from(after) <= (INTERVAL * 2).as_millis() + 500,
        "LifelineHolding active {after} ms after the first hold"
    );
    ensure!(
        agent.kills_of(conn.local_port).is_empty(),
        "killed during a hold: {:?}",
        agent.decisions()
    );
    let active = active_since(&prometheus, quiet_from)?;
    let names: BTreeSet<&str> = active.iter().map(|(n, _)| n.as_str()).collect();
    ensure!(
        names == BTreeSet::from(["LifelineHolding"]),
        "alerts active during the run: {active:?}"
    );
    ensure!(
        active.contains(&("LifelineHolding".to_owned(), "pending".to_owned())),
        "never pending before firing: {active:?}"
    );
    Ok(())
}
