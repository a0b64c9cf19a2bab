//! Issue 33 (d): nothing of lifeline's is left on a device's tc chain.
//! (1) The agent killed (SIGKILL) with a fast phase open: before Linux 6.6 its clsact filter
//!     outlives it (exactly one), the octets it adds stop at the phase's 10 s bound while
//!     the kernel's own probes go on, and the next agent removes it before attaching its own:
//!     exactly one again. With tcx the link goes with the process: none, then one.
//! (2) `lifeline check` interrupted by SIGINT or SIGTERM while its tc program is attached
//!     ends by that signal and leaves no filter, link or clsact qdisc.
//! Before 5.15 there are no fast probes: no filter ever, and status and check say why.

use std::os::unix::process::ExitStatusExt as _;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::tc_chain::{has_clsact, lifeline_on_dev};
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::scenarios::tc_check::{check_says_unavailable, spawn_check};
use lifeline_tests::scenarios::tc_lab::{
    agent, agent_args, idle_client, idle_client_armed, placed, wait_fast,
};
use lifeline_tests::scenarios::tc_steps::{
    lifeline_attached, octets_stop_at_the_bound, probe_counts, quiet,
};
use lifeline_tests::{mono_ms, require_root, wait_until};

#[test]
fn a_killed_agent_leaves_one_filter_at_most_and_its_octets_stop() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let ns = &s.lab.client;
    let (tcx, fast_probes) = (
        kernel::has(&features::TCX),
        kernel::has(&features::FAST_PROBES),
    );
    // The kernel's own abort after 60 unanswered probes, not 20, and pokes no faster than the
    // kernel's own probes: the phase is still open at the kill (it ends at 14 unanswered),
    // and the socket outlives the killed agent by about a minute.
    let mut first = agent_args(&s, &["--keepalive", "1s,1s,60", "--fast-probes", "1s"])?;
    let client = idle_client_armed(&s, &first, "1s,1s,60")?;
    let port = client.local_port().context("no local port")?;
    if !fast_probes {
        let (unavailable, _) = wait_fast(&first, "unavailable", "")?;
        first.proc.kill();
        let second = agent(&s)?;
        wait_fast(&second, "unavailable", "")?;
        ensure!(
            lifeline_on_dev(ns)?.1.is_empty() && !has_clsact(ns)?,
            "no fast probes, no filter"
        );
        let shows = format!("no tc filter before or after a SIGKILL; status `{unavailable}`");
        kernel::report(&features::FAST_PROBES, &shows);
        kernel::report(&features::TCX, &shows);
        return Ok(());
    }
    placed(&s).with_context(|| first.proc.stderr_text())?;
    wait_fast(&first, "on", "out")?;
    let sizes = s.lab.count_probe_sizes(port)?;
    let _fault = s.lab.blackhole_flow(port)?;
    // The phase is open once a probe carried its octet.
    wait_until(
        "an octet probe",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || Ok((s.lab.rule_counts(&sizes)?[1].first().copied().unwrap_or(0) > 0).then_some(())),
    )?;
    let phase_ms = mono_ms();
    first.proc.kill();
    let at_kill = probe_counts(&s, &sizes)?;
    let (links, filters) = lifeline_on_dev(ns)?;
    let left = if tcx {
        ensure!(
            links == 0 && filters.is_empty(),
            "a tcx link goes with its process: {links}, {filters:?}"
        );
        "no link left".to_owned()
    } else {
        ensure!(
            links == 0 && filters.len() == 1 && has_clsact(ns)?,
            "the killed agent's one filter stays: {filters:?}"
        );
        octets_stop_at_the_bound(&s, &sizes, phase_ms, at_kill)?
    };
    let mut second = agent(&s)?;
    let _client = idle_client(&s, &second)?;
    let f = placed(&s).with_context(|| second.proc.stderr_text())?;
    wait_fast(&second, "on", "out")?;
    if !tcx {
        let removed = second.log().iter().any(|(_, v)| {
            v.pointer("/fields/message").and_then(|m| m.as_str())
                == Some(
                    "removed the tc filters a killed lifeline left (with their programs and maps)",
                )
        });
        ensure!(
            removed,
            "the new agent says it removed the stale filter:\n{}",
            second.proc.stderr_text()
        );
    }
    // A clean stop takes its filter or link away, and on clsact the qdisc it added.
    second.stop();
    let (links, filters) = lifeline_on_dev(ns)?;
    ensure!(
        links == 0 && filters.is_empty() && !has_clsact(ns)?,
        "after a clean stop: {links} links, {filters:?}"
    );
    kernel::report(
        &features::TCX,
        &format!(
            "SIGKILLed with a fast phase open: {left}; the next agent: exactly one ({}), none after its clean stop",
            f.map_or_else(
                || "tcx, first".to_owned(),
                |f| format!("clsact priority {} handle {:#x}", f.priority, f.handle)
            )
        ),
    );
    Ok(())
}

#[test]
fn an_interrupted_check_leaves_nothing_on_the_device() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let ns = &s.lab.client;
    let fast_probes = kernel::has(&features::FAST_PROBES);
    let check = || spawn_check(&s);
    // Nothing leaving eth0: the check watches it for its longest (3.5 s), a window the
    // interrupt below cannot miss even under emulation.
    quiet(ns)?;
    let mut shown = Vec::new();
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let mut p = check()?;
        if fast_probes {
            // Interrupted while its program is on the device.
            wait_until(
                "check's tc program on eth0",
                Duration::from_mins(1),
                Duration::from_millis(20),
                || {
                    ensure!(
                        p.try_status().is_none(),
                        "check ended first: {}",
                        p.stderr_text()
                    );
                    Ok(lifeline_attached(ns)?.then_some(()))
                },
            )?;
        } else {
            // Nothing to wait for: interrupted while it loads the probe.
            std::thread::sleep(Duration::from_millis(200));
        }
        p.signal(sig);
        let status = p
            .wait_timeout(Duration::from_secs(15))
            .context("check did not end")?;
        let (links, filters) = lifeline_on_dev(ns)?;
        let clsact = has_clsact(ns)?;
        ensure!(
            links == 0 && filters.is_empty() && !clsact,
            "after {name}: {links} links, filters {filters:?}, clsact {clsact}"
        );
        ensure!(
            status.signal() == Some(sig),
            "check ended by {status:?}, not {name}"
        );
        shown.push(format!("{name}: {status}"));
    }
    if !fast_probes {
        shown.push(check_says_unavailable(&s)?);
    }
    kernel::report(
        &features::FAST_PROBES,
        &format!(
            "check interrupted {}: nothing left on the device ({})",
            if fast_probes {
                "while its tc program was attached"
            } else {
                "while loading (nothing to attach on this kernel)"
            },
            shown.join(", ")
        ),
    );
    Ok(())
}
