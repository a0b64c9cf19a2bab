//! A client that behaves like Go's `net.Dialer` (kubelet, client-go, etcd's client): it
//! turns keepalive on and sets 30 s idle, 30 s interval and count 9 right after `connect()`
//! returns, after lifeline armed the socket. lifeline's values must still be the ones in
//! force: in `lifeline status`, in the client's own `getsockopt`, in `ss -tnoi`'s keepalive
//! timer; and an idle black hole must be found on lifeline's schedule, not Go's 30 s. Twice:
//! with the lab's Rust client replaying Go's calls (Go 1.23's, with the count), and with a
//! client built by Debian's Go toolchain (1.19: idle and interval, no count).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::keepalive::latest;
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::idle_lab::{
    LIFELINE, SERVER, agent_with, go_like_client, keepalive_timer_s,
    silent_kill_after_flow_blackhole, wait_armed,
};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, Client, Lab, assertions::ss, mono_ms, require_root, wait_until};

/// The Go-like fixture: lab-client replaying Go's sequence of `setsockopt` calls.
#[test]
fn go_dialer_keepalive_holds_and_its_idle_black_hole_is_killed() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let agent = agent_with(&s, &[])?;
    let mode = [
        "--sockopts-every",
        "500ms",
        "watch",
        "--every",
        "60",
        "--redial",
    ];
    let client = go_like_client(&s, "30,30,9", &mode)?;
    let since = mono_ms();
    let port = held_at_lifelines_values(&s, &agent, &client)?;
    let opts = wait_until(
        "a fresh sockopts report",
        Duration::from_secs(5),
        Duration::from_millis(100),
        || Ok(latest(&client).filter(|o| o.mono_ms > since)),
    )?;
    ensure!(
        opts.keepalive && opts.values() == LIFELINE,
        "after Go's 30,30,9 the client on port {port} reads {opts:?}, want {LIFELINE:?}"
    );
    let after = silent_kill_after_flow_blackhole(&s, &agent, &client)?;
    kernel::report(
        &features::APP_KEEPALIVE,
        &format!(
            "Go-like 30,30,9 after connect held at 1s,1s,20; killed as silent {after} ms after the black hole"
        ),
    );
    Ok(())
}

/// The real thing: a client built with Debian's Go toolchain (tests/go/go-watch.go),
/// dialing with `net.Dialer{KeepAlive: 30s}` as kubelet does.
#[test]
fn real_go_client_keepalive_holds_and_its_idle_black_hole_is_killed() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let agent = agent_with(&s, &[])?;
    let args = ["-peer", SERVER, "-every", "60", "-keepalive", "30s"];
    let client = Client::start_bin("go-watch", &s.lab, Some(&s.cgroup), &args)?;
    held_at_lifelines_values(&s, &agent, &client)?;
    let after = silent_kill_after_flow_blackhole(&s, &agent, &client)?;
    eprintln!("real Go client: killed as silent {after} ms after the black hole");
    Ok(())
}

/// The client's first event arrived, lifeline's status shows its values on the socket, and
/// so does `ss -tnoi`'s keepalive timer: never more than lifeline's 1 s idle away (Go's own
/// value would show up to 30 s). Returns the socket's local port.
fn held_at_lifelines_values(s: &Setup, agent: &Agent, client: &Client) -> Result<u16> {
    let port = client.local_port().context("no local port")?;
    client.wait_event("the first event", Duration::from_secs(10), |e| {
        e.event == "ok"
    })?;
    wait_armed(agent, port, "1s,1s,20")?;
    let row = ss::find(&s.lab.client, port, Lab::server_addr(false))?
        .with_context(|| format!("socket missing:\n{}", ss::dump(&s.lab.client)))?;
    let timer = keepalive_timer_s(&row.info)
        .with_context(|| format!("no keepalive timer in ss: {}", row.info))?;
    ensure!(
        timer <= 1.05,
        "ss -tnoi: keepalive timer {timer} s: {}",
        row.info
    );
    Ok(port)
}
