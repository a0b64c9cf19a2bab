//! Issue 33 (c): lifeline's tc program (the fast probes' octets) is a good neighbour in the
//! egress chain of the device it attaches to. A neighbour (tests/bpf/neighbour.c: a CNI's or
//! host firewall's program, counting every packet and dropping TCP to one port) is attached
//! before and after lifeline, as a tcx link and as a clsact filter, ending the chain
//! (`TC_ACT_OK`, as Cilium's) or passing packets on (`TC_ACT_UNSPEC`/`TCX_NEXT`, as
//! Calico's). Every neighbour sees every packet the device sends and its drop holds; where
//! the neighbours let packets on, lifeline's octets still go out (an idle black hole is
//! killed within the fast budget with octet probes); where one ahead of it ends the chain,
//! status and the metric say "fast probes hidden by another program on eth0", and a restart
//! puts lifeline ahead again. tcx where the kernel has it (6.6), clsact before; before 5.15
//! (no fast probes) nothing of lifeline's is on the chain and status says why.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::idle_lab::silent_kill_after_flow_blackhole;
use lifeline_tests::kernel::{self, features};
use lifeline_tests::scenario::Setup;
use lifeline_tests::tc_chain::{Tally, fast, lifeline_on_dev};
use lifeline_tests::tc_lab::{agent, drop_holds, idle_client, metric, placed, wait_fast};
use lifeline_tests::tc_neighbour::{Neighbour, Place, Verdict};
use lifeline_tests::{mono_ms, require_root, wait_until};

/// Where lifeline's clsact filter must go (kernel/probe/fast/place.rs): one below the lowest
/// priority in use, or beside Cilium's priority-1 filter, with lifeline's handle ("LL").
const HANDLE: u32 = 0x4c4c;

#[test]
fn neighbours_attached_before_keep_their_verdicts_and_lifeline_s_octets_go_out() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let ns = &s.lab.client;
    let (tcx, fast_probes) = (
        kernel::has(&features::TCX),
        kernel::has(&features::FAST_PROBES),
    );
    // One that passes packets on, then, last in the chain, one that ends it.
    let (a, b) = if tcx {
        (
            Neighbour::attach(ns, Place::Tcx { first: false }, Verdict::Next, 7771)?,
            Neighbour::attach(
                ns,
                Place::Clsact {
                    priority: 1,
                    handle: 1,
                },
                Verdict::Ok,
                7772,
            )?,
        )
    } else {
        (
            Neighbour::attach(
                ns,
                Place::Clsact {
                    priority: 7,
                    handle: 1,
                },
                Verdict::Next,
                7771,
            )?,
            Neighbour::attach(
                ns,
                Place::Clsact {
                    priority: 9,
                    handle: 1,
                },
                Verdict::Ok,
                7772,
            )?,
        )
    };
    let agent = agent(&s)?;
    let client = idle_client(&s, &agent)?;
    let shows = if fast_probes {
        // lifeline goes ahead of both: first in tcx, one priority below 7 on clsact.
        let filter = placed(&s)?;
        if !tcx {
            let f = filter.context("no filter")?;
            ensure!(
                (f.priority, f.handle) == (6, HANDLE),
                "lifeline's filter: {f:?}"
            );
        }
        let (summary, _) = wait_fast(&agent, "on", "out")?;
        summary
    } else {
        ensure!(
            lifeline_on_dev(ns)?.0 + lifeline_on_dev(ns)?.1.len() == 0,
            "nothing of lifeline's without fast probes"
        );
        wait_fast(&agent, "unavailable", "")?.0
    };
    let tally = Tally::start(ns, &[&a, &b])?;
    // The idle black hole: killed within the fast budget with octet probes (the helper
    // asserts this kernel's cadence), through both neighbours.
    let after = silent_kill_after_flow_blackhole(&s, &agent, &client)?;
    let sent = tally.every_packet_passed(ns, &[&a, &b], 10)?;
    drop_holds(&s, &a)?;
    drop_holds(&s, &b)?;
    kernel::report(
        &features::FAST_PROBES,
        &format!(
            "beside neighbours attached before it (one passing packets on, one ending the chain): status `{shows}`; an idle black hole killed {after} ms after the fault; both neighbours saw all {sent} packets sent and their drops held"
        ),
    );
    Ok(())
}

#[test]
fn a_neighbour_attached_after_lifeline_passes_packets_on_or_hides_it_and_status_says_so()
-> Result<()> {
    require_root();
    let s = Setup::new()?;
    let ns = &s.lab.client;
    let (tcx, fast_probes) = (
        kernel::has(&features::TCX),
        kernel::has(&features::FAST_PROBES),
    );
    // Before 6.6: Cilium's legacy filter first (priority 1, handle 1, ending the chain).
    let cilium = if tcx {
        None
    } else {
        Some(Neighbour::attach(
            ns,
            Place::Clsact {
                priority: 1,
                handle: 1,
            },
            Verdict::Ok,
            7771,
        )?)
    };
    let mut agent = agent(&s)?;
    let client = idle_client(&s, &agent)?;
    if fast_probes {
        check_place(&s)?;
        wait_fast(&agent, "on", "out")?;
    }
    // Attached after lifeline, ahead of it: one that passes packets on.
    let ahead = |verdict, port, handle| {
        let place = if tcx {
            Place::Tcx { first: true }
        } else {
            Place::Clsact {
                priority: 1,
                handle,
            }
        };
        Neighbour::attach(ns, place, verdict, port)
    };
    let next = ahead(Verdict::Next, 7772, 2)?;
    let mut all: Vec<&Neighbour> = cilium.iter().chain([&next]).collect();
    let tally = Tally::start(ns, &all)?;
    let after = silent_kill_after_flow_blackhole(&s, &agent, &client)?;
    tally.every_packet_passed(ns, &all, 10)?;
    for n in &all {
        drop_holds(&s, n)?;
    }
    // Then one that ends the chain, ahead of everything.
    let hider = ahead(Verdict::Ok, 7773, 3)?;
    all = vec![&hider];
    let tally = Tally::start(ns, &all)?;
    let shows = if fast_probes {
        let hidden = hidden_is_said_and_the_kill_still_comes(&s, &agent)?;
        // Restarted, lifeline goes ahead of it again (tcx: first; clsact: the newest at
        // priority 1), alone: the stopped agent's filter went with it.
        agent.stop();
        agent = lifeline_tests::tc_lab::agent(&s)?;
        let client = idle_client(&s, &agent)?;
        check_place(&s)?;
        let (on, _) = wait_fast(&agent, "on", "out")?;
        let again = silent_kill_after_flow_blackhole(&s, &agent, &client)?;
        format!(
            "a neighbour ahead passing packets on: killed {after} ms after the fault with octets; one ahead ending the chain: status `{hidden}`; restarted: `{on}`, killed {again} ms after the fault"
        )
    } else {
        let f = fast(&agent)?;
        ensure!(
            f.devices.is_empty() && lifeline_on_dev(ns)?.1.is_empty(),
            "no device: {}",
            f.summary
        );
        let summary = f.summary;
        let _ = client;
        format!("nothing of lifeline's on the chain; status `{summary}`")
    };
    tally.every_packet_passed(ns, &all, 5)?;
    drop_holds(&s, &hider)?;
    kernel::report(&features::TCX, &shows);
    Ok(())
}

/// lifeline's program where it goes: tcx first, or the newest clsact filter at Cilium's
/// priority 1 with its own handle.
fn check_place(s: &Setup) -> Result<()> {
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
fn hidden_is_said_and_the_kill_still_comes(
    s: &Setup,
    agent: &lifeline_tests::Agent,
) -> Result<String> {
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
