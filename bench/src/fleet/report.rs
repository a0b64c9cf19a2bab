//! The `fleet` section of docs/BENCHMARKS.md, written from the run: how the fleet was sized
//! and why, one table per scenario, `NotReady` over time, (d)'s holding, then the goals and the
//! arithmetic to 5,000 nodes (`goals.rs`).

use std::fmt::Write as _;

use super::Machine;
use super::raw::Raw;
use super::tally::Tally;

pub(super) fn section(m: &Machine, results: &[(Raw, Vec<Tally>)]) -> String {
    let n = m.per_contender;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## Fleet: {n} nodes per contender behind one rotating endpoint\n"
    );
    let _ = writeln!(
        s,
        "`{}`, {:.1} min on this machine ({:.0}% of both cores busy during the scenarios). \
         {} simulated nodes, {n} per contender, each its own network namespace and cgroup with a \
         kubelet-like client (`kube-client`: a heartbeat every 10 s and one watch on one HTTP/2 \
         connection, a random address order per dial, re-resolving and re-dialing on errors). \
         dnsmasq serves `api.lab.test` with the three API servers (TTL 5 s); the servers log \
         every connection and request, so heartbeats, re-lists and new connections are counted \
         per node at the servers (a new connection is counted at its first request; a connection \
         that never carries one is an agent's probe of the endpoint, counted apart). The four contenders share the fleet and live through each \
         fault at the same moment; lifeline's {n} nodes each run their own agent with every \
         tuning at its default (`--cgroup NODE --endpoint-clients --endpoint api.lab.test:6443 \
         --dns-server ...`).\n",
        m.command,
        m.elapsed.as_secs_f64() / 60.0,
        m.busy_pct,
        n * 4
    );
    sizing(&mut s, m);
    for (raw, tallies) in results {
        scenario(&mut s, raw, tallies);
    }
    let _ = writeln!(
        s,
        "![NotReady nodes and new connections per second](bench-fleet.svg)\n"
    );
    super::goals::write(&mut s, m, results);
    s
}

fn sizing(s: &mut String, m: &Machine) {
    let n = m.per_contender;
    let what = if n < m.requested {
        format!(
            "**Sized down from {} to {n} nodes per contender.** Every agent attaches its \
             `sock_ops` and connect programs to the cgroup v2 root, and the kernel allows at \
             most {} programs per attach type on one cgroup (`BPF_CGROUP_MAX_PROGS`): the \
             65th agent on a machine fails in `bpf_link_create`. {} `sock_ops` programs were already attached by other work on this machine \
             and {} slots were left for it, so {n} lifeline nodes fit.",
            m.requested,
            super::sizing::KERNEL_MAX_PROGS,
            m.attached_before,
            super::sizing::HEADROOM
        )
    } else {
        format!("{n} nodes per contender, as asked.")
    };
    let _ = writeln!(
        s,
        "{what} CPU was not the limit: the {n} agents took {:.1}% of one core together while \
         idle (sweeping once a second, re-resolving every TTL) and {:.0} MiB RSS; one loopback \
         connect+accept+close in a node took {:.0} µs before the agents and {:.0} µs with their \
         {n} `sock_ops` programs attached at the root (every socket on the machine runs all of \
         them; each returns at once for a socket outside its own namespace).\n",
        m.agents_idle_cpu_pct, m.agents_rss_mib, m.connect_us_before, m.connect_us_with
    );
}

fn opt_s(v: Option<u64>, window: u64) -> String {
    v.map_or_else(|| format!("> {window} s"), |s| format!("{s} s"))
}

fn scenario(s: &mut String, raw: &Raw, tallies: &[Tally]) {
    let window = raw.scenario.window_s();
    let _ = writeln!(
        s,
        "### {}\n\n{}; watched for {window} s.\n",
        raw.scenario.label(),
        raw.scenario.what()
    );
    let _ = writeln!(
        s,
        "| contender | NotReady (total) | NotReady (most at once) | all healthy after | \
         new conns/s peak | p99 | re-lists/s peak | p99 | probe conns/s peak | lifeline kills | \
         script restarts | DNS q/s (fleet) |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for t in tallies {
        let _ = writeln!(
            s,
            "| {} | {} of {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            t.contender.name(),
            t.not_ready_total,
            t.nodes,
            Tally::peak(&t.not_ready),
            opt_s(t.all_healthy_s, window),
            Tally::peak(&t.reconnects),
            Tally::p99(&t.reconnects),
            Tally::peak(&t.relists),
            Tally::p99(&t.relists),
            Tally::peak(&t.probes),
            t.kills,
            t.restarts,
            t.dns_qps
        );
    }
    let steps: Vec<usize> = (1..=window / 10)
        .map(|k| usize::try_from(k * 10).unwrap_or(0))
        .collect();
    let head: Vec<String> = steps.iter().map(|k| format!("{k} s")).collect();
    let _ = writeln!(
        s,
        "\nNotReady nodes over time (s after the first step):\n\n| contender | {} |\n|---|{}",
        head.join(" | "),
        "---|".repeat(steps.len())
    );
    for t in tallies {
        let v: Vec<String> = steps
            .iter()
            .map(|&k| {
                t.not_ready
                    .get(k - 1)
                    .map_or("-".into(), ToString::to_string)
            })
            .collect();
        let _ = writeln!(s, "| {} | {} |", t.contender.name(), v.join(" | "));
    }
    let on: Vec<String> = tallies
        .iter()
        .map(|t| {
            let [a, b, c] = t.on_server;
            format!("{} {a}/{b}/{c}", t.contender.name())
        })
        .collect();
    let _ = writeln!(
        s,
        "\nNodes on api1/api2/api3 when the first step came: {}.",
        on.join("; ")
    );
    for t in tallies.iter().filter(|t| t.never_started > 0).take(1) {
        let _ = writeln!(
            s,
            "\n{} nodes never sent a heartbeat before the fault.",
            t.never_started
        );
    }
    if let Some(at) = raw
        .second
        .filter(|_| raw.scenario == super::scenario::Scenario::ControlPlaneDown)
    {
        let _ = writeln!(
            s,
            "\nAfter the control plane came back ({:.0} s):\n",
            super::raw::secs(at - raw.t0)
        );
        for t in tallies {
            if let Some([one, none, more]) = t.after_second {
                let _ = writeln!(
                    s,
                    "- {}: kills during the outage {}; nodes that reconnected exactly once {one}, \
                     never {none} (still on its old connection, recovered or not), more than once {more}.",
                    t.contender.name(),
                    t.kills_in_outage
                );
            }
        }
    }
    s.push('\n');
}
