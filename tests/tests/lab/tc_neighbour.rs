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

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::tc_chain::{Tally, fast, lifeline_on_dev};
use lifeline_tests::fixtures::tc_neighbour::{Neighbour, Place, Verdict};
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::require_root;
use lifeline_tests::scenarios::idle_lab::silent_kill_after_flow_blackhole;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::scenarios::tc_lab::{agent, drop_holds, idle_client, placed, wait_fast};
use lifeline_tests::scenarios::tc_steps::{
    HANDLE, check_place, hidden_is_said_and_the_kill_still_comes,
};

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
        agent = lifeline_tests::scenarios::tc_lab::agent(&s)?;
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
    // Its drop checked first: those connections are traffic through it too.
    drop_holds(&s, &hider)?;
    tally.every_packet_passed(ns, &all, 3)?;
    kernel::report(&features::TCX, &shows);
    Ok(())
}
