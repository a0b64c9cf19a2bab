//! Each hook's runs and nanoseconds per run (`kernel.bpf_stats_enabled=1`, put back
//! afterwards) for the flows that matter: a watched bulk flow (the target is at most 100
//! program runs per GB: callbacks only where there is news), an unwatched one (none per
//! byte), and 1,000 connects a second from inside and from outside the watched cgroup (the
//! connect hooks run on every connect of the node to a watched port).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use lifeline_common::features;
use lifeline_tests::fixtures::tc_neighbour::{Neighbour, Place, Verdict};
use serde_json::Value;

use crate::bpfstats::{self, Runs, StatsOn};
use crate::socklab::{CHURN, SockLab, bench_exe};

pub(crate) struct Flow {
    pub what: String,
    /// From the watched cgroup (or to its idle connections); false: the node's other traffic.
    pub watched: bool,
    /// GB received, for a bulk flow; connects made, for churn.
    pub gb: Option<f64>,
    pub connects: Option<u64>,
    pub runs: BTreeMap<String, Runs>,
}

pub(crate) struct BpfCost {
    pub flows: Vec<Flow>,
    pub secs: u64,
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
    let _on = StatsOn::new()?;
    let mut flows = Vec::new();
    for watched in [true, false] {
        let (runs, round) = bpfstats::during(&hooks, || {
            let r = crate::cost::iperf(&l, secs, true, watched);
            bpfstats::settle();
            r
        })?;
        #[expect(clippy::cast_precision_loss, reason = "seconds")]
        let gb = round.gbit_s * secs as f64 / 8.0;
        flows.push(Flow {
            what: format!("{} bulk flow (iperf3 {secs} s)", kind(watched)),
            watched,
            gb: Some(gb),
            connects: None,
            runs,
        });
    }
    for watched in [true, false] {
        let (runs, n) = bpfstats::during(&hooks, || churn(&l, secs, watched))?;
        flows.push(Flow {
            what: format!("1,000 connects/s, {}", kind(watched)),
            watched,
            gb: None,
            connects: Some(n),
            runs,
        });
    }
    // Idle watched connections: the unanswered-probe hook runs for each keepalive probe (the
    // tracepoint fallback, for each timer of the host), one kernel read below its threshold.
    l.hold(IDLE, true)?;
    // Past the keepalive idle time (2 s): every one is being probed.
    std::thread::sleep(Duration::from_secs(4));
    let idle_secs = secs * 2;
    let (runs, ()) = bpfstats::during(&hooks, || {
        std::thread::sleep(Duration::from_secs(idle_secs));
        Ok(())
    })?;
    flows.push(Flow {
        what: format!("{IDLE} idle watched connections ({idle_secs} s)"),
        watched: true,
        gb: None,
        connects: None,
        runs,
    });
    for f in &flows {
        println!("cost: {}: {:?}", f.what, f.runs);
    }
    Ok(BpfCost { flows, secs })
}

const IDLE: usize = 1_000;

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
