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
            1,000,000 packets a second through that device that is {:.1} % of one core.\n",
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
    out.push((
        "tc egress, ns per packet (the node's unwatched traffic: bulk flow and connects)"
            .to_owned(),
        unwatched(c, crate::bpfstats::TC).ns_per_run(),
        50.0,
        "ns",
    ));
    out
}
