//! Longer steps of the tc-chain tests (`tests/tests/lab/tc_neighbour.rs`, `tc_leftovers.rs`):
//! where lifeline's program must sit beside Cilium's legacy filter, what a program ahead of
//! it that ends the chain makes status and the kills look like, and a killed agent's octets
//! stopping at the fast phase's bound.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_common::poke::BOUND_NS;

use crate::fixtures::agent::Agent;
use crate::infra::nft::Fault;
use crate::infra::util::{mono_ms, wait_until};
use crate::scenarios::scenario::Setup;
use crate::scenarios::tc_lab::{idle_client, metric, placed, wait_fast};

/// Where lifeline's clsact filter must go (kernel/probe/fast/place.rs): one below the lowest
/// priority in use, or beside Cilium's priority-1 filter, with lifeline's handle ("LL").
pub const HANDLE: u32 = 0x4c4c;

/// lifeline's program where it goes: tcx first, or the newest clsact filter at Cilium's
/// priority 1 with its own handle.
///
/// # Errors
/// When it is elsewhere.
pub fn check_place(s: &Setup) -> Result<()> {
    if let Some(f) = placed(s)? {
        ensure!(
            (f.priority, f.handle) == (1, HANDLE),
            "lifeline's filter: {f:?}"
        );
    }
    Ok(())
}

/// An idle socket's flow black-holed while a program ahead of lifeline ends the chain: the
/// fast phase opens but its probe leaves without the octet, status and the metric say the
/// program is hidden on eth0, and the silent kill still comes, at the kernel's 1 s cadence.
/// Returns status's summary.
///
/// # Errors
/// When one of those does not hold.
pub fn hidden_is_said_and_the_kill_still_comes(s: &Setup, agent: &Agent) -> Result<String> {
    let client = idle_client(s, agent)?;
    let port = client.local_port().context("no local port")?;
    let no_octet = "lifeline_probe_fast_no_octet_total";
    let before = metric(s, no_octet)?;
    let _fault = s.lab.blackhole_flow(port)?;
    let fault_ms = mono_ms();
    let (summary, _) = wait_fast(agent, "hidden", "hidden")?;
    ensure!(
        summary.starts_with("fast probes hidden by another program on eth0"),
        "{summary}"
    );
    ensure!(
        metric(s, "lifeline_fast_probes_hidden{device=\"eth0\"}")? > 0.5,
        "the metric"
    );
    // The phase really opened: it ended for want of an octet.
    wait_until(
        "a fast phase without its octet",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || Ok((metric(s, no_octet)? > before).then_some(())),
    )?;
    let table = agent.status_table()?;
    ensure!(
        table.contains("fast probes hidden by another program on eth0"),
        "{table}"
    );
    let d = wait_until(
        "the kill",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || {
            Ok(agent
                .decisions()
                .into_iter()
                .find(|d| d.is_for_port(port) && d.action == "kill"))
        },
    )?;
    let after = d.at_ms - fault_ms;
    ensure!(
        d.verdict == "silent" && d.probe_bytes.unwrap_or(0) == 0 && after >= 8_000,
        "a hidden program adds no octet, the probes come at the kernel's cadence: {after} ms, {}",
        d.raw
    );
    Ok(summary)
}

/// The killed agent's filter still runs with its maps: the socket's phase, still in `POKE`,
/// gets octets on the kernel's own probes (1 s apart) after the kill, and none once past its
/// bound, while those probes go on. `phase_ms`: when its first octet probe was seen (after
/// the phase opened); `at_kill`: the probe counts (bare, with an octet) right after the kill.
///
/// # Errors
/// When no octet came between the kill and the bound (the phase was not open), one came
/// after it, or the kernel's probes stopped.
pub fn octets_stop_at_the_bound(
    s: &Setup,
    sizes: &Fault,
    phase_ms: u64,
    at_kill: (u64, u64),
) -> Result<String> {
    let start = phase_ms + BOUND_NS / 1_000_000 + 1_000;
    std::thread::sleep(Duration::from_millis(start.saturating_sub(mono_ms())));
    let (bare0, octet0) = probe_counts(s, sizes)?;
    // The socket aborts itself after 60 unanswered probes (the agent armed 1s,1s,60): the
    // window ends long before that.
    std::thread::sleep(Duration::from_secs(4));
    let (bare1, octet1) = probe_counts(s, sizes)?;
    ensure!(
        octet0 > at_kill.1,
        "no octet probe between the kill and the bound: the phase was not open at the kill"
    );
    ensure!(
        bare1 - bare0 >= 2 && octet1 == octet0,
        "after the bound: {} bare probes, {} with an octet (want the kernel's, none with an octet)",
        bare1 - bare0,
        octet1 - octet0
    );
    Ok(format!(
        "its one filter stayed and added octets to {} probes after the kill, none after the phase's 10 s bound among {} probes",
        octet0 - at_kill.1,
        bare1 - bare0
    ))
}

/// The flow's probes counted so far: (bare, with an octet).
///
/// # Errors
/// When nft cannot list the counters.
pub fn probe_counts(s: &Setup, sizes: &Fault) -> Result<(u64, u64)> {
    let c = s.lab.rule_counts(sizes)?;
    let n = |i: usize| c.get(i).and_then(|r| r.first().copied()).unwrap_or(0);
    Ok((n(0), n(1)))
}

/// Nothing leaves `DEV` any more: no router solicitations (the lab's fresh IPv6 sends some
/// for seconds), and its transmit count still for 1.5 s. Then a program that watches the
/// device for traffic (the check's `silence evidence` row) watches its longest.
///
/// # Errors
/// When the sysctl fails or the device keeps sending for 20 s.
pub fn quiet(ns: &crate::infra::netns::NetNs) -> Result<()> {
    let key = format!(
        "net.ipv6.conf.{}.router_solicitations=0",
        crate::fixtures::tc_neighbour::DEV
    );
    ns.exec("sysctl", &["-qw", &key])?;
    // The first look only takes the count: each next one compares it with 1.5 s before.
    let mut last = None;
    wait_until(
        "a quiet device",
        Duration::from_secs(20),
        Duration::from_millis(1500),
        || {
            let now = crate::assertions::tc_chain::tx_packets(ns)?;
            Ok((last.replace(now) == Some(now)).then_some(()))
        },
    )
}

/// Whether lifeline's program is on `DEV`, asked only where this kernel puts it (tcx from
/// 6.6, else clsact): one command, as often as a test can.
///
/// # Errors
/// When the listing fails.
pub fn lifeline_attached(ns: &crate::infra::netns::NetNs) -> Result<bool> {
    if crate::infra::kernel::has(&crate::infra::kernel::features::TCX) {
        let short = &crate::assertions::tc_chain::PROGRAM[..15];
        return Ok(crate::assertions::tc_chain::tcx(ns)?
            .unwrap_or_default()
            .iter()
            .any(|n| n == short));
    }
    let name = Some(crate::assertions::tc_chain::PROGRAM);
    Ok(crate::assertions::tc_chain::filters(ns)?
        .iter()
        .any(|f| f.name.as_deref() == name))
}
