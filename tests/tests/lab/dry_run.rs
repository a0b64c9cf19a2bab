//! Dry run observes, Hold holds: while lifeline only observes, its own probing ends no
//! connection sooner than the application's own settings would. Two idle clients, one with
//! its own keepalive of 5 s, 5 s, 4 probes (25 s after its last answer), one with none,
//! black-holed: with lifeline's defaults and fast probes the kernel would abort both about
//! 10 s after their last answer. In `--dry-run` (and, second test, while the guard holds
//! because the endpoint's only address is black-holed) the first is still there at 20 s and
//! aborted by its own keepalive at 25 s, the second is still there after 40 s, and the log
//! shows the kill lifeline would have made (`outcome: dry-run`, or held) with its evidence,
//! and the deferral with the application's deadline. Without the TCP iterator (5.10) a dry
//! run arms no keepalive at all: the clients' own settings decide alone, and nothing is
//! judged silent.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::defer_lab::{self, Pair, deferrals};
use lifeline_tests::scenarios::idle_lab::agent_with;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, Decision, require_root, wait_until};
use serde_json::Value;

/// How long the sockets are watched after the fault: well past lifeline's own 10-21 s.
const WATCH: Duration = Duration::from_secs(42);

#[test]
fn dry_run_never_aborts_sooner_than_the_applications_own_settings() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let agent = agent_with(&s, &["--dry-run"])?;
    let defers = kernel::has(&features::DEFER);
    let armed = if defers { "1s,1s,20" } else { "off" };
    let p = defer_lab::start(&s, &agent, armed, false)?;
    let seen = defer_lab::watch(&s, &p, WATCH)?;
    eprintln!("dry run: {seen:?}");
    if std::env::var_os("LL_DEBUG").is_some() {
        for (_, v) in agent.log() {
            let t = v.get("target").and_then(Value::as_str).unwrap_or("");
            if t.contains("defer") || t.contains("decision") {
                eprintln!("{v}");
            }
        }
    }
    defer_lab::own_settings_decided(&seen, WATCH, &p)?;
    if !defers {
        // The documented degradation: nothing armed, so nothing judged silent either.
        ensure!(agent.decisions().is_empty(), "{:?}", agent.decisions());
        kernel::report(&features::DEFER, "dry run: keepalive `off` (not armed)");
        return Ok(());
    }
    would_have_killed(&agent, &p, "dry-run", "dry-run")?;
    kernel::report(
        &features::DEFER,
        &format!(
            "dry run: own 5,5,4 aborted {} ms after the fault, none alive after {} ms",
            seen.own_abort.map_or(0, |a| a.0),
            seen.none_established_until
        ),
    );
    Ok(())
}

#[test]
fn a_hold_never_aborts_sooner_than_the_applications_own_settings() -> Result<()> {
    require_root();
    if !kernel::has(&features::DEFER) {
        return Ok(());
    }
    let s = Setup::new()?;
    // The endpoint's only address is the black-holed server: no address accepts, so every
    // kill is held.
    let agent = agent_with(&s, &["--endpoint", "198.51.100.2:6443"])?;
    let p = defer_lab::start(&s, &agent, "1s,1s,20", true)?;
    let seen = defer_lab::watch(&s, &p, WATCH)?;
    eprintln!("hold: {seen:?}");
    defer_lab::own_settings_decided(&seen, WATCH, &p)?;
    would_have_killed(&agent, &p, "held: no healthy endpoint", "hold")?;
    Ok(())
}

#[test]
fn lifelines_values_come_back_when_the_socket_answers_again() -> Result<()> {
    require_root();
    if !kernel::has(&features::DEFER) {
        return Ok(());
    }
    let s = Setup::new()?;
    let agent = agent_with(&s, &["--dry-run"])?;
    let client = lifeline_tests::Client::start(
        &s.lab,
        Some(&s.cgroup),
        &[
            "--peer",
            lifeline_tests::scenarios::idle_lab::SERVER,
            "--keepalive",
            "5,5,4",
            "idle",
        ],
    )?;
    let port = client.local_port().context("no port")?;
    lifeline_tests::scenarios::idle_lab::wait_armed(&agent, port, "1s,1s,20")?;
    let fault = s.lab.blackhole_flow(port)?;
    // Deferred once its evidence is in (about 3 s with fast probes), shown in status.
    let step = Duration::from_millis(200);
    wait_until("the deferral", Duration::from_secs(15), step, || {
        Ok((!deferrals(&agent, port).is_empty()).then_some(()))
    })?;
    let st = agent.status()?;
    let cell = &st.socket_for_port(port).context("socket gone")?.keepalive;
    ensure!(cell.contains("(deferred"), "status keepalive: {cell}");
    // The path comes back: the next probe (a second apart) is answered, and lifeline's own
    // values come back within the agent's poll.
    s.lab.heal(&fault)?;
    wait_until(
        "lifeline's values back",
        Duration::from_secs(8),
        step,
        || {
            let st = agent.status()?;
            Ok(st
                .socket_for_port(port)
                .filter(|k| k.keepalive == "1s,1s,20")
                .map(|_| ()))
        },
    )?;
    let resumed = agent
        .log()
        .into_iter()
        .map(|(_, v)| v)
        .any(|v| v.pointer("/fields/event").and_then(Value::as_str) == Some("resumed"));
    ensure!(resumed, "no `resumed` line:\n{}", agent.proc.stderr_text());
    ensure!(
        client.errors().is_empty(),
        "the client saw an error: {}",
        client.dump()
    );
    Ok(())
}

/// The kill lifeline would have made, silent with its evidence, for both sockets, and their
/// deferral lines: the first to the application's 25 s, the second with keepalive off.
fn would_have_killed(agent: &Agent, p: &Pair, outcome: &str, mode: &str) -> Result<()> {
    for port in [p.own_port, p.none_port] {
        let decisions: Vec<Decision> = agent
            .decisions()
            .into_iter()
            .filter(|d| d.is_for_port(port))
            .collect();
        let silent = decisions.iter().find(|d| {
            d.verdict == "silent"
                && d.outcome == outcome
                && d.raw
                    .pointer("/fields/keepalive_probes")
                    .and_then(Value::as_u64)
                    >= Some(12)
        });
        ensure!(
            silent.is_some() && decisions.iter().all(|d| d.outcome != "killed"),
            "port {port}: want a silent decision with outcome `{outcome}` and 12 probes, and no kill: {decisions:#?}"
        );
        let lines = deferrals(agent, port);
        let line = lines
            .iter()
            .find(|v| v.pointer("/fields/mode").and_then(Value::as_str) == Some(mode));
        ensure!(
            line.is_some(),
            "port {port}: no `{mode}` deferral line: {lines:#?}"
        );
        let abort = line
            .and_then(|v| v.pointer("/fields/abort_after_ms"))
            .and_then(Value::as_u64);
        let want = (port == p.own_port).then_some(25_000);
        ensure!(
            abort == want,
            "port {port}: the deferral's abort {abort:?}, want {want:?}: {line:?}"
        );
    }
    Ok(())
}
