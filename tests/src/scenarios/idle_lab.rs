//! What the idle-connection tests share: an agent on the scenario's cgroup, waiting until a
//! socket is armed, a client that sets keepalive the way Go's dialer does, and the whole
//! "idle flow black-holed, killed as silent, re-dialed" check.

use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::assertions::watched::kill_decision;
use crate::scenarios::scenario::{ECONNABORTED, Setup};
use crate::{Agent, AgentArgs, Client, mono_ms, wait_until};

pub const SERVER: &str = "198.51.100.2:6443";
/// lifeline's default keepalive: 1 s idle, then probes 1 s apart, the kernel's own abort
/// after 20 unanswered.
pub const LIFELINE: (u64, u64, u64) = (1, 1, 20);
/// The silent rule without fast probes (12 probes unanswered, nothing heard for 1 + 12 x 1
/// s) after the last answered probe, at most 1 s before the fault; one confirming look;
/// slack for a loaded two-core machine.
pub const SILENT_BUDGET: Duration = Duration::from_secs(13 + 1 + 4);
/// With fast probes (Linux 5.15): the first probe at most 1 s after the fault, 1 s to the
/// second, 10 more 100 ms apart, a confirming look, and the same slack.
pub const FAST_SILENT_BUDGET: Duration = Duration::from_secs(1 + 1 + 1 + 1 + 4);
/// Without fast probes 12 probes 1 s apart cannot be collected sooner than this.
const SLOW_SILENT_FLOOR: Duration = Duration::from_secs(11);

/// An agent with the scenario's cgroup as target and `extra` flags, ready.
///
/// # Errors
/// When it does not start or never gets ready.
pub fn agent_with(s: &Setup, extra: &[&str]) -> Result<Agent> {
    agent_of(s, None, extra)
}

/// `agent_with` for the binary `bin` (None: `paths::lifeline()`).
///
/// # Errors
/// As `agent_with`.
pub fn agent_of(s: &Setup, bin: Option<&std::path::Path>, extra: &[&str]) -> Result<Agent> {
    let args = AgentArgs {
        extra: extra.iter().map(|a| (*a).to_owned()).collect(),
        bin: bin.map(std::path::Path::to_path_buf),
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    Ok(agent)
}

/// Waits until `status` lists the socket of local `port` with keepalive starting `want`.
///
/// # Errors
/// When it does not within 10 s (with the status table).
pub fn wait_armed(agent: &Agent, port: u16, want: &str) -> Result<()> {
    wait_until(
        "the socket armed in lifeline status",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            let st = agent.status()?;
            Ok(st
                .socket_for_port(port)
                .filter(|k| k.keepalive.starts_with(want))
                .map(|_| ()))
        },
    )
    .with_context(|| format!("status: {}", agent.status_table().unwrap_or_default()))
}

/// A lab client that sets keepalive `ka` (IDLE,INTERVAL,COUNT) right after connect, one
/// option at a time, as Go's `net.Dialer` does; `mode` are its remaining arguments.
///
/// # Errors
/// When it does not start.
pub fn go_like_client(s: &Setup, ka: &str, mode: &[&str]) -> Result<Client> {
    let mut args = vec![
        "--peer",
        SERVER,
        "--keepalive",
        ka,
        "--keepalive-after-connect",
    ];
    args.extend(mode);
    Client::start(&s.lab, Some(&s.cgroup), &args)
}

/// Black-holes the idle `client`'s flow (new connections still work) and checks what an
/// operator would: a `silent` kill of exactly that socket within `SILENT_BUDGET`, nothing
/// unacknowledged on it, the client's `ECONNABORTED`, a working re-dialed stream, and
/// keepalive probes dropped by the black hole. Returns the milliseconds from fault to kill.
///
/// # Errors
/// The first of those that does not hold.
pub fn silent_kill_after_flow_blackhole(s: &Setup, agent: &Agent, client: &Client) -> Result<u64> {
    let port = client.local_port().context("no local port")?;
    // The fault is in force somewhere between these two moments: the upper bound counts
    // from the later, the floor from the earlier (in an emulated 5.10 guest the rule took
    // over 370 ms to go in, and a kill 11 s after the earlier came 10.95 s after the later).
    let asked_ms = mono_ms();
    let fault = s.lab.blackhole_flow(port)?;
    let fault_ms = mono_ms();
    let decision = kill_decision(agent, port, SILENT_BUDGET + Duration::from_secs(10))?;
    let after = decision.at_ms - fault_ms;
    eprintln!("killed {after} ms after the black hole: {}", decision.raw);
    // Fast probes: the verdict's probes carried their octet and came 100 ms apart; without
    // them (before 5.15) 1 s apart. Either way the same 12 unanswered in a row.
    let octets = decision.probe_bytes.unwrap_or(0);
    if crate::infra::kernel::has(&crate::infra::kernel::features::FAST_PROBES) {
        ensure!(
            u128::from(after) <= FAST_SILENT_BUDGET.as_millis() && octets >= 8,
            "fast probes: killed {after} ms after the fault with {octets} octet probes; want <= {FAST_SILENT_BUDGET:?} and >= 8: {}",
            decision.raw
        );
    } else {
        let since_asked = decision.at_ms - asked_ms;
        ensure!(
            u128::from(after) <= SILENT_BUDGET.as_millis()
                && u128::from(since_asked) >= SLOW_SILENT_FLOOR.as_millis()
                && octets == 0,
            "killed {after} ms after the fault ({since_asked} ms after it was asked for) with {octets} octet probes; budget {SILENT_BUDGET:?}, floor {SLOW_SILENT_FLOOR:?}, no fast probes on this kernel"
        );
    }
    ensure!(
        decision.verdict == "silent" && decision.outcome == "killed",
        "{}",
        decision.raw
    );
    ensure!(
        decision.unacked_bytes == Some(0),
        "an idle socket has nothing unacked: {}",
        decision.raw
    );
    client_aborted(client)?;
    // The flow-only black hole spares new connections: the re-dialed stream works.
    let redial = client.wait_event("the re-dial", Duration::from_secs(10), |e| {
        e.event == "redialed"
    })?;
    client.wait_event(
        "an event on the new connection",
        Duration::from_secs(10),
        |e| e.event == "ok" && e.mono_ms >= redial.mono_ms,
    )?;
    let (_, dropped) = s.lab.counters(&fault)?;
    ensure!(
        dropped > 0,
        "the black hole dropped nothing (no keepalive probe?)"
    );
    Ok(after)
}

/// Seconds left on the keepalive timer in an `ss -tnoi` line (`timer:(keepalive,1.5sec,0)`,
/// `timer:(keepalive,450ms,0)`), if it shows one.
#[must_use]
pub fn keepalive_timer_s(info: &str) -> Option<f64> {
    let rest = info.split("timer:(keepalive,").nth(1)?;
    let t = rest.split(',').next()?;
    if let Some(ms) = t.strip_suffix("ms") {
        return ms.parse::<f64>().ok().map(|v| v / 1000.0);
    }
    if let Some(min) = t.strip_suffix("min") {
        return min.parse::<f64>().ok().map(|v| v * 60.0);
    }
    t.strip_suffix("sec")?.parse().ok()
}

/// The client's connection ended with `ECONNABORTED` (lifeline's `SOCK_DESTROY`), within 5 s.
///
/// # Errors
/// When no error event comes, or another errno.
pub fn client_aborted(client: &Client) -> Result<()> {
    let err = client.wait_event("the client's error", Duration::from_secs(5), |e| {
        e.event == "error"
    })?;
    ensure!(
        err.errno == Some(ECONNABORTED),
        "not ECONNABORTED: {}",
        err.raw
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn keepalive_timers_as_ss_prints_them() {
        let t = super::keepalive_timer_s;
        assert_eq!(t("cubic timer:(keepalive,1.5sec,0) uid:0"), Some(1.5));
        assert_eq!(t("timer:(keepalive,450ms,0)"), Some(0.45));
        assert_eq!(t("timer:(keepalive,29min,0)"), Some(1740.0));
        assert_eq!(t("timer:(on,200ms,0)"), None);
    }
}
