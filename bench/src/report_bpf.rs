//! The report's rows for the kernel side's cost (`costbpf`), with their targets.

use std::fmt::Write as _;

use anyhow::Result;

use crate::costbpf::BpfCost;

const HOOKS: [(&str, &str); 3] = [
    ("cgroup_sock_ops", "sock_ops"),
    ("cgroup_inet4_connect", "connect4"),
    ("cgroup_inet6_connect", "connect6"),
];

#[expect(clippy::cast_precision_loss, reason = "counts for display")]
pub(crate) fn bpf(s: &mut String, c: &BpfCost) -> Result<()> {
    writeln!(
        s,
        "### The kernel side, per hook (`kernel.bpf_stats_enabled=1`)\n"
    )?;
    writeln!(
        s,
        "One agent at its defaults; each flow runs {} s (iperf3 to port 6443, a watched port, \
        from the watched cgroup or from outside it; churn: connect and close at 1,000/s; idle: \
        1,000 watched connections nobody talks to, each probed every 1 s). Runs and time are \
        the kernel's own counters for this agent's programs only; the sysctl is put back \
        afterwards. The unanswered-probe hook is fentry on `tcp_write_wakeup` where the kernel \
        allows BPF trampolines, else the `timer:timer_expire_entry` tracepoint, which runs for \
        every timer of the host (`lifeline check`'s row `unanswered probes` names the one in \
        use; this project's CI machines refuse trampolines).\n",
        c.secs
    )?;
    writeln!(
        s,
        "| flow | GB / connects | sock_ops runs | per GB | ns per run | connect4 runs | ns per run | connect6 runs | unanswered-probe hook runs | ns per run | tc egress runs | ns per run | the neighbour's tc, ns per run |"
    )?;
    writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")?;
    for f in &c.flows {
        let get = |k: &str| f.runs.get(k).cloned().unwrap_or_default();
        let (ops, c4, c6) = (get(HOOKS[0].0), get(HOOKS[1].0), get(HOOKS[2].0));
        let ua = get(crate::bpfstats::UNANSWERED);
        let tc = get(crate::bpfstats::TC);
        let nb = get(crate::bpfstats::NEIGHBOUR);
        let ns =
            |r: &crate::bpfstats::Runs| r.ns_per_run().map_or("-".into(), |n| format!("{n:.0}"));
        writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            f.what,
            f.gb.map_or_else(
                || f.connects.map_or("-".into(), |n| n.to_string()),
                |g| format!("{g:.2} GB")
            ),
            ops.count,
            f.gb.map_or("-".into(), |g| format!("{:.1}", ops.count as f64 / g)),
            ns(&ops),
            c4.count,
            ns(&c4),
            c6.count,
            ua.count,
            ns(&ua),
            tc.count,
            ns(&tc),
            ns(&nb)
        )?;
    }
    writeln!(s)?;
    if let Some(ns) = unwatched(c, crate::bpfstats::TC).ns_per_run() {
        writeln!(
            s,
            "The tc egress program runs for every packet the device sends, the node's other \
            traffic too (the unwatched rows: {ns:.0} ns per packet). On a node forwarding \
            1,000,000 packets a second through that device that is {:.1} % of one core, as \
            `bpf_stats` counts it (its own run, below, is the real cost).\n",
            ns / 10.0
        )?;
    }
    if let Some(nb) = unwatched(c, crate::bpfstats::NEIGHBOUR).ns_per_run() {
        writeln!(
            s,
            "Beside it, after it on the same device, the lab's stand-in for a CNI's program \
            (tests/bpf/neighbour.c: one count and a look at the TCP port per packet, passing \
            packets on) ran for the same packets: {nb:.0} ns per packet on the unwatched rows. \
            Both figures include `bpf_stats`' own two clock reads per run: this is what the \
            smallest useful tc program costs here, and what lifeline's is read against.\n"
        )?;
    }
    windows_note(s, c)?;
    test_run_note(s, c)?;
    per_gb_note(s, c)?;
    Ok(())
}

/// lifeline's CPU on a bulk flow, from counters rather than from throughput rounds: its
/// programs' time (`bpf_stats`, clock reads included) and the agent's own CPU over the flow,
/// per GB, against the machine's CPU per GB for that flow.
fn per_gb_note(s: &mut String, c: &BpfCost) -> Result<()> {
    writeln!(
        s,
        "lifeline's CPU per GB of a bulk flow, counted rather than compared across rounds (the \
        throughput rounds above spread more than the effect): its programs' time on the flow \
        (`bpf_stats`, clock reads included, so an upper bound) and the agent's own CPU over \
        it, per GB, as a share of the machine's CPU per GB for the same flow.\n"
    )?;
    writeln!(
        s,
        "| flow | GB | programs, ms per GB | agent, ms per GB | machine, ms per GB | lifeline's share |"
    )?;
    writeln!(s, "|---|---|---|---|---|---|")?;
    for (f, share) in c.flows.iter().filter_map(|f| per_gb(f).map(|x| (f, x))) {
        writeln!(
            s,
            "| {} | {:.2} | {:.2} | {:.2} | {:.0} | {:.2} % |",
            f.what,
            f.gb.unwrap_or_default(),
            share.programs,
            share.agent,
            share.machine,
            share.pct()
        )?;
    }
    writeln!(s)?;
    Ok(())
}

/// One bulk flow's CPU per GB: lifeline's programs, the agent, the whole machine (ms).
pub(crate) struct PerGb {
    programs: f64,
    agent: f64,
    machine: f64,
}

impl PerGb {
    pub(crate) fn pct(&self) -> f64 {
        (self.programs + self.agent) / self.machine * 100.0
    }
}

#[expect(clippy::cast_precision_loss, reason = "nanoseconds for display")]
pub(crate) fn per_gb(f: &crate::costbpf::Flow) -> Option<PerGb> {
    let (gb, machine, agent) = (f.gb?, f.cpu_s_per_gb?, f.agent_cpu_s?);
    let ns: u64 = f
        .runs
        .iter()
        .filter(|(k, _)| k.as_str() != crate::bpfstats::NEIGHBOUR)
        .map(|(_, r)| r.ns)
        .sum();
    (gb > 0.0 && machine > 0.0).then(|| PerGb {
        programs: ns as f64 / 1e6 / gb,
        agent: agent * 1e3 / gb,
        machine: machine * 1e3,
    })
}

/// Each tc program's own run, without `bpf_stats`' clock reads (`testrun`).
fn test_run_note(s: &mut String, c: &BpfCost) -> Result<()> {
    let mut parts = Vec::new();
    for (key, ns) in &c.test_run {
        let who = if *key == crate::bpfstats::TC {
            "lifeline's"
        } else {
            "the neighbour's"
        };
        parts.push(match ns {
            Ok(ns) => format!("{who} {ns:.0} ns"),
            Err(e) => format!("{who} not measured ({e})"),
        });
    }
    writeln!(
        s,
        "Each tc program's own run, without `bpf_stats`: the kernel's test run of the program \
        on one 54-octet bare TCP ACK with a socket that is not watched, a million times with \
        `kernel.bpf_stats_enabled` at 0 (whatever it was before the bench), the \
        median of five (`bpftool prog run`, `bench/src/testrun.rs`): {}. The difference from \
        the figures above is what timing each run costs on this machine.\n",
        parts.join(", ")
    )?;
    Ok(())
}

/// Why the targets are read from windows, with this run's numbers: the whole-flow mean, the
/// median of the windows, the worst window, and the steal time over the flows.
fn windows_note(s: &mut String, c: &BpfCost) -> Result<()> {
    writeln!(
        s,
        "Whether a stolen vCPU or an interrupt in the middle of a run moves these means (each \
        run's time is two clock reads around it, so whatever happens between them is the \
        run's): the same runs per 200 ms window (each with at least {} runs), their median \
        and worst, and the host's steal time over each flow (`bench/src/bpfwindows.rs`). A \
        median close to the mean says the mean is each run's cost, not a few stolen ones.\n",
        crate::bpfwindows::MIN_RUNS
    )?;
    writeln!(
        s,
        "| flow | program | mean ns per run | median of windows | worst window | windows | host steal time over the flow |"
    )?;
    writeln!(s, "|---|---|---|---|---|---|---|")?;
    for f in &c.flows {
        for (key, name) in [
            (HOOKS[1].0, "connect4"),
            (crate::bpfstats::TC, "tc egress"),
            (crate::bpfstats::NEIGHBOUR, "the neighbour's tc"),
        ] {
            let ws = f.windows.get(key).map(Vec::as_slice).unwrap_or_default();
            let (Some(mean), Some((med, n))) = (
                f.runs.get(key).and_then(crate::bpfstats::Runs::ns_per_run),
                crate::bpfwindows::median_ns(ws),
            ) else {
                continue;
            };
            let worst = ws
                .iter()
                .filter(|w| w.count >= crate::bpfwindows::MIN_RUNS)
                .filter_map(crate::bpfstats::Runs::ns_per_run)
                .fold(0.0_f64, f64::max);
            writeln!(
                s,
                "| {} | {name} | {mean:.0} | {med:.0} | {worst:.0} | {n} | {} ms |",
                f.what, f.steal_ms
            )?;
        }
    }
    writeln!(s)?;
    Ok(())
}

/// A tc program's runs (`key`: lifeline's, or the neighbour's) on the unwatched flows (bulk
/// and connects) together: its cost per packet of traffic lifeline does not watch.
fn unwatched(c: &BpfCost, key: &str) -> crate::bpfstats::Runs {
    let mut r = crate::bpfstats::Runs::default();
    for f in c.flows.iter().filter(|f| !f.watched) {
        if let Some(t) = f.runs.get(key) {
            r.count += t.count;
            r.ns += t.ns;
        }
    }
    r
}

/// (what, measured, limit, unit) rows for the targets table.
#[expect(clippy::cast_precision_loss, reason = "counts for display")]
pub(crate) fn targets(c: &BpfCost) -> Vec<(String, Option<f64>, f64, &'static str)> {
    let mut out = Vec::new();
    let find = |p: &str| c.flows.iter().find(|f| f.what.starts_with(p));
    if let Some(f) = find("watched bulk") {
        let runs = f.runs.get(HOOKS[0].0).map_or(0, |r| r.count);
        out.push((
            "program runs per GB, watched healthy bulk flow".to_owned(),
            f.gb.map(|g| runs as f64 / g),
            100.0,
            "runs/GB",
        ));
    }
    // Both kinds of connect: the watched ones record their owner (an LRU insert); the node's
    // other connects to a watched port, the many, stop before it.
    for (flow, what) in [
        (
            "1,000 connects/s, watched",
            "connects from the watched cgroup",
        ),
        (
            "1,000 connects/s, unwatched",
            "the node's other connects to a watched port",
        ),
    ] {
        if let Some(f) = find(flow) {
            out.push((
                format!("connect4, ns per run ({what})"),
                f.runs
                    .get(HOOKS[1].0)
                    .and_then(crate::bpfstats::Runs::ns_per_run),
                1000.0,
                "ns",
            ));
        }
    }
    for f in c.flows.iter().filter(|f| f.gb.is_some()) {
        out.push((
            format!("lifeline's share of the CPU per GB, {}", f.what),
            per_gb(f).map(|p| p.pct()),
            1.0,
            "%",
        ));
    }
    out.push((
        "tc egress, ns per packet (the node's unwatched traffic: bulk flow and connects)"
            .to_owned(),
        unwatched(c, crate::bpfstats::TC).ns_per_run(),
        50.0,
        "ns",
    ));
    // The same program's own run, without the two clock reads `bpf_stats` puts around each
    // run above (`crate::testrun`): what a packet of the node's traffic really pays.
    let own = c
        .test_run
        .iter()
        .find(|(key, _)| *key == crate::bpfstats::TC)
        .and_then(|(_, ns)| ns.as_ref().ok().copied());
    out.push((
        "tc egress, ns per packet, its own run (a bare ACK of an unwatched socket, no `bpf_stats`)"
            .to_owned(),
        own,
        50.0,
        "ns",
    ));
    out
}
