//! What the dry-run and hold tests share (`tests/tests/lab/dry_run.rs`): idle clients in the
//! watched cgroup, one with its own keepalive of 5 s idle, 5 s apart, 4 probes (its kernel
//! aborts it 25 s after the last answer), one with none (its kernel never aborts it while
//! idle), and one with its own stricter 1 s, 1 s, 5 (6 s: kept by lifeline as it is, and never
//! brought forward by fast probes), all black-holed; then when each is aborted, and the
//! agent's lines about them.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use crate::assertions::ss;
use crate::infra::lab::Lab;
use crate::infra::nft::Fault;
use crate::scenarios::idle_lab::{SERVER, wait_armed};
use crate::scenarios::scenario::Setup;
use crate::{Agent, Client, mono_ms};

/// `ETIMEDOUT`: what the kernel's own keepalive abort gives the application.
pub const ETIMEDOUT: i32 = 110;

/// The two clients, watched, their flows black-holed at `fault_ms`.
pub struct Pair {
    pub own: Client,
    pub own_port: u16,
    pub none: Client,
    pub none_port: u16,
    pub strict: Client,
    pub strict_port: u16,
    pub fault_ms: u64,
    /// When each socket last heard from its peer before the fault (`CLOCK_MONOTONIC` ms), as
    /// `ss` shows it: its own keepalive's deadline counts from there.
    pub own_last_ms: u64,
    pub strict_last_ms: u64,
    _faults: Vec<Fault>,
}

/// Starts both clients, waits until lifeline's status shows them armed with `armed`, then
/// black-holes them: their flows only, or with `whole_path` the server's address (new
/// connections too: the guard's check fails and lifeline holds).
///
/// # Errors
/// When a client does not start or is not armed, or nft refuses a rule.
pub fn start(s: &Setup, agent: &Agent, armed: &str, whole_path: bool) -> Result<Pair> {
    let own = Client::start(
        &s.lab,
        Some(&s.cgroup),
        &["--peer", SERVER, "--keepalive", "5,5,4", "idle"],
    )?;
    let none = Client::start(&s.lab, Some(&s.cgroup), &["--peer", SERVER, "idle"])?;
    let strict = Client::start(
        &s.lab,
        Some(&s.cgroup),
        &["--peer", SERVER, "--keepalive", "1,1,5", "idle"],
    )?;
    let own_port = own.local_port().context("no port")?;
    let none_port = none.local_port().context("no port")?;
    let strict_port = strict.local_port().context("no port")?;
    wait_armed(agent, own_port, armed)?;
    wait_armed(agent, none_port, armed)?;
    // The application's stricter values stand (where lifeline arms and reads at all).
    let kept = if armed == "off" { "off" } else { "1s,1s,5" };
    wait_armed(agent, strict_port, kept)?;
    let faults = if whole_path {
        vec![s.lab.blackhole(Lab::server_addr(false).ip())?]
    } else {
        [own_port, none_port, strict_port]
            .into_iter()
            .map(|p| s.lab.blackhole_flow(p))
            .collect::<Result<_>>()?
    };
    let fault_ms = mono_ms();
    let last = |port: u16| -> Result<u64> {
        let row = ss::find(&s.lab.client, port, Lab::server_addr(false))?
            .with_context(|| format!("socket {port} gone at the fault"))?;
        let quiet = row
            .quiet_ms()
            .with_context(|| format!("no lastack in ss: {}", row.info))?;
        Ok(mono_ms().saturating_sub(quiet))
    };
    let (own_last_ms, strict_last_ms) = (last(own_port)?, last(strict_port)?);
    Ok(Pair {
        own,
        own_port,
        none,
        none_port,
        strict,
        strict_port,
        fault_ms,
        own_last_ms,
        strict_last_ms,
        _faults: faults,
    })
}

/// What happened to the pair within `watch` after the fault.
#[derive(Debug)]
pub struct Seen {
    /// When the client with its own keepalive got its error, ms after the fault, and errno.
    pub own_abort: Option<(u64, Option<i32>)>,
    /// Likewise, the one with its own stricter keepalive.
    pub strict_abort: Option<(u64, Option<i32>)>,
    /// The last moment both sockets were seen ESTABLISHED, ms after the fault.
    pub own_established_until: u64,
    pub none_established_until: u64,
}

/// Polls both sockets every 250 ms for `watch`.
///
/// # Errors
/// When `ss` fails.
pub fn watch(s: &Setup, p: &Pair, watch: Duration) -> Result<Seen> {
    let peer = Lab::server_addr(false);
    let mut seen = Seen {
        own_abort: None,
        strict_abort: None,
        own_established_until: 0,
        none_established_until: 0,
    };
    let end = p.fault_ms + u64::try_from(watch.as_millis())?;
    // Bounded by `watch`: one round every 250 ms.
    while mono_ms() < end {
        let now = mono_ms() - p.fault_ms;
        if ss::find(&s.lab.client, p.own_port, peer)?.is_some() {
            seen.own_established_until = now;
        }
        if ss::find(&s.lab.client, p.none_port, peer)?.is_some() {
            seen.none_established_until = now;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let abort = |c: &Client| {
        c.events()
            .into_iter()
            .find(|e| e.event == "error")
            .map(|e| (e.mono_ms.saturating_sub(p.fault_ms), e.errno))
    };
    seen.own_abort = abort(&p.own);
    seen.strict_abort = abort(&p.strict);
    Ok(seen)
}

/// Asserts the application's own settings decided: the one with keepalive 5,5,4 aborted with
/// `ETIMEDOUT` at its own deadline (25 s after its last answer before the fault), not sooner, the 1,1,5 one at its own 6 s, the one without keepalive still there
/// at the end.
///
/// # Errors
/// The first of those that does not hold.
pub fn own_settings_decided(seen: &Seen, watched: Duration, p: &Pair) -> Result<()> {
    // Counted from the fault, as `seen` is.
    let deadline = |last_ms: u64, own: u64| (last_ms + own).saturating_sub(p.fault_ms);
    let own = deadline(p.own_last_ms, 25_000);
    // The client's own error is the moment the kernel aborted its socket (its pending read
    // fails then): exact, where `ss` polls are seconds apart under emulation.
    let (at, errno) = seen
        .own_abort
        .with_context(|| format!("no abort by its own keepalive: {seen:?}"))?;
    ensure!(
        at + 1_000 >= own && at <= own + 2_500 && errno == Some(ETIMEDOUT),
        "its own keepalive should abort it at its deadline, {own} ms after the fault (ETIMEDOUT); it ended {at} ms after the fault with errno {errno:?}"
    );
    let strict_own = deadline(p.strict_last_ms, 6_000);
    let strict = seen.strict_abort;
    ensure!(
        strict.is_some_and(|(at, errno)| at + 1_000 >= strict_own
            && at <= strict_own + 2_500
            && errno == Some(ETIMEDOUT)),
        "the socket with its own stricter 1,1,5 should be aborted by it {strict_own} ms after the fault: {strict:?}"
    );
    // Polled every 250 ms (slower under emulation): seen until the last few seconds.
    let until = u64::try_from(watched.as_millis())? - 3_000;
    ensure!(
        seen.none_established_until >= until,
        "the socket without keepalive was gone {} ms after the fault: {seen:?}\n{}",
        seen.none_established_until,
        p.none.dump()
    );
    Ok(())
}

/// The agent's `lifeline::defer` lines for `port` (`event == "deferred"`).
#[must_use]
pub fn deferrals(agent: &Agent, port: u16) -> Vec<Value> {
    let suffix = format!(":{port}");
    agent
        .log()
        .into_iter()
        .map(|(_, v)| v)
        .filter(|v| v.get("target").and_then(Value::as_str) == Some("lifeline::defer"))
        .filter(|v| v.pointer("/fields/event").and_then(Value::as_str) == Some("deferred"))
        .filter(|v| {
            v.pointer("/fields/local")
                .and_then(Value::as_str)
                .is_some_and(|l| l.ends_with(&suffix))
        })
        .collect()
}
