//! Each hook's runs and nanoseconds per run (`kernel.bpf_stats_enabled=1`, put back
//! afterwards) for the flows that matter: a watched bulk flow (the target is at most 100
//! program runs per GB: callbacks only where there is news), an unwatched one (none per
//! byte), and 1,000 connects a second from inside and from outside the watched cgroup (the
//! connect hooks run on every connect of the node to a watched port).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_common::features;
use lifeline_tests::fixtures::tc_neighbour::{Neighbour, Place, Verdict};
use serde_json::Value;

use crate::bpfstats::{self, Runs};
use crate::bpfwindows::{self, Fdinfo};
use crate::socklab::{CHURN, SockLab, bench_exe};

pub(crate) struct Flow {
    pub what: String,
    /// From the watched cgroup (or to its idle connections); false: the node's other traffic.
    pub watched: bool,
    /// GB received, for a bulk flow; connects made, for churn.
    pub gb: Option<f64>,
    pub connects: Option<u64>,
    pub runs: BTreeMap<String, Runs>,
    /// A bulk flow's machine CPU-s per GB (`cost::iperf`), and the agent's own CPU-s over it.
    pub cpu_s_per_gb: Option<f64>,
    pub agent_cpu_s: Option<f64>,
    /// The same runs per 200 ms window (`bpfwindows`).
    pub windows: BTreeMap<String, Vec<Runs>>,
    /// The host's steal time over the flow, ms, all CPUs.
    pub steal_ms: u64,
}

pub(crate) struct BpfCost {
    pub flows: Vec<Flow>,
    pub secs: u64,
    /// lifeline's tc program and the neighbour's, each's own ns per packet without
    /// `bpf_stats` (`testrun`), or why it was not measured.
    pub test_run: Vec<(&'static str, std::result::Result<f64, String>)>,
}

pub(crate) fn run(quick: bool) -> Result<BpfCost> {
    println!("cost: each hook's runs with kernel.bpf_stats_enabled=1");
    let secs = if quick { 3 } else { 5 };
    let mut l = SockLab::new()?;
    let _server = l.iperf_server()?;
    let (agent, _) = l.agent(&[])?;
    // One watched connection, so the tc program is on the client's device (where the flows
    // below leave) before anything is counted: a node whose kubelet is connected.
    l.hold(1, true)?;
    tc_attached(&agent)?;
    let mut hooks = bpfstats::hooks(agent.proc.pid())?;
    anyhow::ensure!(
        !hooks.is_empty(),
        "none of the agent's programs is attached"
    );
    let neighbour = neighbour(&l)?;
    hooks.insert(
        bpfstats::NEIGHBOUR.to_owned(),
        bpfstats::prog_ids(neighbour.pid()),
    );
    let stats = bpfstats::stats_on()?;
    let pid = agent.proc.pid();
    let files = Fdinfo::of(&[pid, neighbour.pid()]);
    let mut flows = Vec::new();
    for watched in [true, false] {
        let cpu0 = crate::procstat::proc_cpu_s(pid)?;
        let (m, round) = measure(&hooks, &files, || {
            let r = crate::cost::iperf(&l, secs, true, watched);
            bpfstats::settle();
            r
        })?;
        let agent_cpu_s = crate::procstat::proc_cpu_s(pid)? - cpu0;
        #[expect(clippy::cast_precision_loss, reason = "seconds")]
        let gb = round.gbit_s * secs as f64 / 8.0;
        let what = format!("{} bulk flow (iperf3 {secs} s)", kind(watched));
        let mut f = m.flow(what, watched, Some(gb), None);
        f.cpu_s_per_gb = Some(round.cpu_s_per_gb);
        f.agent_cpu_s = Some(agent_cpu_s);
        flows.push(f);
    }
    for watched in [true, false] {
        let (m, n) = measure(&hooks, &files, || churn(&l, secs, watched))?;
        let what = format!("1,000 connects/s, {}", kind(watched));
        flows.push(m.flow(what, watched, None, Some(n)));
    }
    // Idle watched connections: the unanswered-probe hook runs for each keepalive probe (the
    // tracepoint fallback, for each timer of the host), one kernel read below its threshold.
    l.hold(IDLE, true)?;
    // Past the keepalive idle time (2 s): every one is being probed.
    std::thread::sleep(Duration::from_secs(4));
    let idle_secs = secs * 2;
    let (m, ()) = measure(&hooks, &files, || {
        std::thread::sleep(Duration::from_secs(idle_secs));
        Ok(())
    })?;
    let what = format!("{IDLE} idle watched connections ({idle_secs} s)");
    flows.push(m.flow(what, true, None, None));
    for f in &flows {
        println!("cost: {}: {:?}, steal {} ms", f.what, f.runs, f.steal_ms);
    }
    // Stats off first, whatever they were before the bench: with them on, the test run
    // times each of its runs too.
    drop(stats);
    let _off = bpfstats::stats_off()?;
    let test_run = [bpfstats::TC, bpfstats::NEIGHBOUR]
        .into_iter()
        .map(|key| {
            let ns = hooks
                .get(key)
                .and_then(|ids| ids.first())
                .context("no such program attached")
                .and_then(|id| crate::testrun::ns_per_packet(*id))
                .map_err(|e| format!("{e:#}"));
            println!("cost: {key}: its own run on a bare ACK: {ns:?}");
            (key, ns)
        })
        .collect();
    Ok(BpfCost {
        flows,
        secs,
        test_run,
    })
}

const IDLE: usize = 1_000;

/// Each hook's runs over a flow, whole and per window, and the steal time over it.
struct Measured {
    runs: BTreeMap<String, Runs>,
    windows: BTreeMap<String, Vec<Runs>>,
    steal_ms: u64,
}

impl Measured {
    fn flow(self, what: String, watched: bool, gb: Option<f64>, connects: Option<u64>) -> Flow {
        Flow {
            what,
            watched,
            gb,
            connects,
            runs: self.runs,
            cpu_s_per_gb: None,
            agent_cpu_s: None,
            windows: self.windows,
            steal_ms: self.steal_ms,
        }
    }
}

fn measure<T>(
    hooks: &BTreeMap<String, Vec<u32>>,
    files: &Fdinfo,
    work: impl FnOnce() -> Result<T>,
) -> Result<(Measured, T)> {
    let steal = bpfwindows::steal_ms();
    let (runs, (windows, out)) =
        bpfstats::during(hooks, || bpfwindows::during(hooks, files, work))?;
    let steal_ms = bpfwindows::steal_ms().saturating_sub(steal);
    Ok((
        Measured {
            runs,
            windows,
            steal_ms,
        },
        out,
    ))
}

/// A TCP port nothing here uses: the neighbour's drop rule must not touch the flows.
const NEIGHBOUR_DROP_PORT: u16 = 7771;

/// The lab's stand-in for a CNI's program (tests/bpf/neighbour.c: a count of each packet and
/// a look at its TCP port), after lifeline's on the same device, passing packets on: what a
/// minimal tc program costs on the same packets, `bpf_stats`' own clock reads included, to
/// read lifeline's ns per packet against.
fn neighbour(l: &SockLab) -> Result<Neighbour> {
    let place = if lifeline_tests::infra::kernel::has(&features::TCX) {
        Place::Tcx { first: false }
    } else {
        Place::Clsact {
            priority: 7,
            handle: 1,
        }
    };
    Neighbour::attach(&l.lab.client, place, Verdict::Next, NEIGHBOUR_DROP_PORT)
}

/// Waits until the agent's status shows its tc program on the client's `eth0`.
fn tc_attached(agent: &lifeline_tests::Agent) -> Result<()> {
    lifeline_tests::infra::util::wait_until(
        "the tc program on eth0",
        Duration::from_secs(20),
        Duration::from_millis(200),
        || {
            let f = lifeline_tests::assertions::tc_chain::fast(agent)?;
            Ok(f.devices.iter().any(|d| d.device == "eth0").then_some(()))
        },
    )
}

fn kind(watched: bool) -> &'static str {
    if watched { "watched" } else { "unwatched" }
}

/// Connect and close 1,000 times a second for `secs`, from the watched cgroup or outside it;
/// returns the connects made.
fn churn(l: &SockLab, secs: u64, watched: bool) -> Result<u64> {
    let (peer, s) = (format!("{CHURN}:6443"), secs.to_string());
    let args = ["churn", "--peer", &peer, "--rate", "1000", "--seconds", &s];
    let exe = bench_exe()?;
    let cmd = if watched {
        l.cgroup.command_in_netns(l.lab.client.name(), &exe, &args)
    } else {
        l.lab.client.command(&exe, &args)
    };
    let mut p = lifeline_tests::Proc::spawn("churn", cmd)?;
    let line = p.wait_stdout("the churn", Duration::from_secs(secs + 30), |t| {
        t.contains("churned")
    })?;
    bpfstats::settle();
    let v: Value = serde_json::from_str(&line.text)?;
    Ok(v["count"].as_u64().unwrap_or(0))
}
