//! Nothing left behind: after a clean stop (SIGTERM, what `systemctl stop lifeline` sends)
//! the sockets lifeline armed carry their application's own options again: a client built by
//! Go's toolchain (kubelet's `net.Dialer`, 30 s idle and interval; count 9, its own from Go
//! 1.23, the kernel's default before) has them back, read through `pidfd_getfd` and `ss`'s
//! keepalive timer; a client that set no keepalive has `SO_KEEPALIVE` off again. And one
//! line at stop says how many sockets were restored. On a kernel without the TCP iterator
//! (5.10) nothing can be put back: the values stay lifeline's and the line says so. After a
//! crash (SIGKILL) the next start puts back what the killed agent changed.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::keepalive::{Sockopts, latest};
use lifeline_tests::fixtures::bpffs::Bpffs;
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::idle_lab::{SERVER, agent_with, keepalive_timer_s, wait_armed};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{
    Agent, AgentArgs, Client, Lab, assertions::ss, infra::pidfd, mono_ms, require_root, wait_until,
};
use serde_json::Value;

/// Kubelet's dialer: 30 s idle, 30 s apart, 9 probes.
const GO: (u64, u64, u64) = (30, 30, 9);
/// lifeline's defaults.
const LIFELINE: (u64, u64, u64) = (1, 1, 20);
/// A socket nobody set keepalive on reads the kernel's defaults (7200 s, 75 s, 9).
const KERNEL: (u64, u64, u64) = (7_200, 75, 9);

struct Clients {
    go: Client,
    go_port: u16,
    plain: Client,
}

/// The Go client and a lab client without keepalive, both watched and armed with lifeline's
/// values (as the clients themselves read them).
fn armed_clients(s: &Setup, agent: &Agent) -> Result<Clients> {
    let go = Client::start_bin(
        "go-watch",
        &s.lab,
        Some(&s.cgroup),
        &["-peer", SERVER, "-every", "60", "-keepalive", "30s"],
    )?;
    let plain = Client::start(
        &s.lab,
        Some(&s.cgroup),
        &["--peer", SERVER, "--sockopts-every", "300ms", "idle"],
    )?;
    let (go_port, plain_port) = (
        go.local_port().context("go: no port")?,
        plain.local_port().context("plain: no port")?,
    );
    // Both watched and armed, in status and as the clients themselves read them below.
    wait_armed(agent, go_port, "1s,1s,20")?;
    wait_armed(agent, plain_port, "1s,1s,20")?;
    let c = Clients { go, go_port, plain };
    let (go_now, plain_now) = (go_options(&c)?, plain_options(&c, mono_ms())?);
    ensure!(
        go_now.keepalive && go_now.values() == LIFELINE,
        "the Go client's socket is not armed: {go_now:?}"
    );
    ensure!(
        plain_now.keepalive && plain_now.values() == LIFELINE,
        "the plain client's socket is not armed: {plain_now:?}"
    );
    Ok(c)
}

fn go_options(c: &Clients) -> Result<Sockopts> {
    pidfd::keepalive_of(c.go.proc.pid(), c.go_port)
}

/// The plain client's own report, printed after `since`.
fn plain_options(c: &Clients, since: u64) -> Result<Sockopts> {
    wait_until(
        "a fresh sockopts report",
        Duration::from_secs(5),
        Duration::from_millis(100),
        || Ok(latest(&c.plain).filter(|o| o.mono_ms > since)),
    )
}

/// SIGTERM, a clean exit, and the stop's one `restored` line.
fn stop(agent: &mut Agent) -> Result<Value> {
    let status = agent.stop().context("lifeline did not exit")?;
    ensure!(status.success(), "lifeline exited with {status}");
    agent
        .log()
        .into_iter()
        .map(|(_, v)| v)
        .find(|v| v.pointer("/fields/event").and_then(Value::as_str) == Some("restored"))
        .with_context(|| format!("no `restored` line:\n{}", agent.proc.stderr_text()))
}

fn field(v: &Value, name: &str) -> u64 {
    v.pointer(&format!("/fields/{name}"))
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX)
}

/// The Go client's own values back, also in `ss`'s keepalive timer (up to 30 s, where
/// lifeline's showed 1 s at most), and the plain client's keepalive off again.
fn applications_own_again(s: &Setup, c: &Clients, since: u64) -> Result<String> {
    let go = go_options(c)?;
    ensure!(
        go.keepalive && go.values() == GO,
        "the Go client's socket after the stop: {go:?}, want {GO:?}"
    );
    let row = ss::find(&s.lab.client, c.go_port, Lab::server_addr(false))?.with_context(|| {
        format!(
            "the Go client's socket is gone:\n{}",
            ss::dump(&s.lab.client)
        )
    })?;
    let timer = keepalive_timer_s(&row.info)
        .with_context(|| format!("no keepalive timer: {}", row.info))?;
    ensure!(
        timer > 20.0,
        "ss -tieo: the keepalive timer is {timer} s, not Go's 30 s: {}",
        row.info
    );
    let plain = plain_options(c, since)?;
    ensure!(
        !plain.keepalive && plain.values() == KERNEL,
        "the plain client's socket after the stop: {plain:?}, want keepalive off, {KERNEL:?}"
    );
    Ok(format!("Go {go:?}, ss timer {timer} s; plain {plain:?}"))
}

#[test]
fn a_clean_stop_gives_the_applications_their_own_options_back() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let mut agent = agent_with(&s, &[])?;
    let c = armed_clients(&s, &agent)?;
    let line = stop(&mut agent)?;
    // The client's reports from here on read the socket after the agent's last pass.
    let since = mono_ms();
    eprintln!(
        "stop: {}",
        line.pointer("/fields/message").unwrap_or(&Value::Null)
    );
    if !kernel::has(&features::RESTORE) {
        // The documented degradation: nothing put back, and the stop line says how many.
        ensure!(
            field(&line, "restored") == 0 && field(&line, "not_restored") >= 2,
            "{line}"
        );
        let go = go_options(&c)?;
        let plain = plain_options(&c, since)?;
        ensure!(
            go.values() == LIFELINE && plain.keepalive && plain.values() == LIFELINE,
            "without the iterator the values stay lifeline's: Go {go:?}, plain {plain:?}"
        );
        kernel::report(
            &features::RESTORE,
            &format!("stop: {}", field(&line, "not_restored")),
        );
        return Ok(());
    }
    let shows = applications_own_again(&s, &c, since)?;
    ensure!(
        field(&line, "restored") >= 2 && field(&line, "not_restored") == 0,
        "{line}"
    );
    // Before 6.12 the callback flags cannot be cleared; the line says so apart.
    let callbacks = field(&line, "callbacks_kept");
    ensure!(
        (callbacks == 0) == kernel::has(&features::ITER_CALLBACKS),
        "callback flags kept on {callbacks} sockets: {line}"
    );
    kernel::report(
        &features::RESTORE,
        &format!("restored {} sockets: {shows}", field(&line, "restored")),
    );
    Ok(())
}

#[test]
fn after_a_crash_the_next_start_puts_them_back() -> Result<()> {
    require_root();
    if !kernel::has(&features::RESTORE) {
        return Ok(());
    }
    let s = Setup::new()?;
    // A bpffs of the test's own at /sys/fs/bpf in both agents' mount namespaces: the pin
    // outlives the first agent as the node's would.
    let bpffs = Bpffs::new()?;
    let args = AgentArgs {
        binds: vec![bpffs.bind()],
        ..AgentArgs::default()
    };
    let mut first = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    first.wait_ready(Duration::from_mins(1))?;
    let c = armed_clients(&s, &first)?;
    first.proc.kill();
    let mut second = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    second.wait_ready(Duration::from_mins(1))?;
    let recovered = second
        .log()
        .into_iter()
        .map(|(_, v)| v)
        .find(|v| v.pointer("/fields/event").and_then(Value::as_str) == Some("recovered"))
        .with_context(|| format!("no `recovered` line:\n{}", second.proc.stderr_text()))?;
    ensure!(field(&recovered, "restored") >= 2, "{recovered}");
    // Re-armed by the second agent (adopted), which read the applications' own values.
    wait_armed(&second, c.go_port, "1s,1s,20")?;
    let line = stop(&mut second)?;
    let since = mono_ms();
    applications_own_again(&s, &c, since)?;
    ensure!(field(&line, "restored") >= 2, "{line}");
    Ok(())
}
