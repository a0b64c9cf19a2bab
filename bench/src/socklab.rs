//! The lab for the cost and scale parts: the basic lab with extra server addresses, a sink
//! that keeps every connection, and holders that open thousands of them, watched (inside the
//! cgroup, to port 6443) or not (outside it).

use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::{Agent, AgentArgs, Cgroup, Lab, Proc};

/// Addresses of the server host: held connections go to these (64k ports each), one sink
/// process each: a process may not hold more than 20,000 descriptors here (the hard limit,
/// which even root cannot raise in this sandbox), so 100,000 connections need several.
pub(crate) const HOLD: [&str; 8] = [
    "198.51.100.20",
    "198.51.100.21",
    "198.51.100.22",
    "198.51.100.23",
    "198.51.100.24",
    "198.51.100.25",
    "198.51.100.26",
    "198.51.100.27",
];
/// Connections per holder process (and at most two chunks land on one sink).
const CHUNK: usize = 9_000;
/// ...iperf3 listens here, and churned connections are accepted and closed here.
pub(crate) const IPERF: &str = "198.51.100.30";
pub(crate) const CHURN: &str = "198.51.100.31";

/// Fields drop top to bottom: the helpers, the sink, the cgroup, then the namespaces.
pub(crate) struct SockLab {
    pub holders: Vec<Proc>,
    pub _sinks: Vec<Proc>,
    next: usize,
    pub cgroup: Cgroup,
    pub lab: Lab,
}

impl SockLab {
    pub(crate) fn new() -> Result<Self> {
        let lab = Lab::new()?;
        for a in HOLD.iter().chain(&[IPERF, CHURN]) {
            lab.server
                .ip(&["addr", "add", &format!("{a}/24"), "dev", "eth0"])?;
        }
        // Every port for the client's connections; lots of queued connects for the sink.
        lab.client.exec(
            "sysctl",
            &["-qw", "net.ipv4.ip_local_port_range=1024 65535"],
        )?;
        lab.server
            .exec("sysctl", &["-qw", "net.core.somaxconn=65535"])?;
        let mut sinks = Vec::new();
        for a in HOLD {
            sinks.push(sink(&lab, &["--hold", &format!("{a}:6443")])?);
        }
        sinks.push(sink(&lab, &["--drop", &format!("{CHURN}:6443")])?);
        Ok(Self {
            holders: Vec::new(),
            _sinks: sinks,
            next: 0,
            cgroup: Cgroup::new()?,
            lab,
        })
    }

    /// Opens `count` connections and keeps them; `watched`: from inside the watched cgroup.
    /// Holders of at most `CHUNK` connections each, every one to the next sink in turn.
    pub(crate) fn hold(&mut self, count: usize, watched: bool) -> Result<()> {
        let exe = bench_exe()?;
        let mut left = count;
        while left > 0 {
            let n = left.min(CHUNK);
            left -= n;
            let peer = format!("{}:6443", HOLD[self.next % HOLD.len()]);
            self.next += 1;
            let count = n.to_string();
            let args = ["hold", "--peers", &peer, "--count", &count];
            let cmd = if watched {
                self.cgroup
                    .command_in_netns(self.lab.client.name(), &exe, &args)
            } else {
                self.lab.client.command(&exe, &args)
            };
            let mut p = Proc::spawn("hold", cmd)?;
            let got = p.wait_stdout("the connections", Duration::from_mins(3), |l| {
                l.contains("\"held\"")
            });
            got.with_context(|| {
                p.stdout_lines()
                    .iter()
                    .map(|l| l.text.clone())
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
            self.holders.push(p);
        }
        Ok(())
    }

    /// Starts lifeline on the watched cgroup with its defaults plus `extra`; waits for ready
    /// and returns it with the time that took.
    /// iperf3's server on `IPERF`:6443, listening.
    pub(crate) fn iperf_server(&self) -> Result<Proc> {
        let args = ["-s", "-B", IPERF, "-p", "6443", "--forceflush"];
        let mut server = Proc::spawn("iperf3", self.lab.server.command("iperf3", &args))?;
        server.wait_stdout("iperf3 to listen", Duration::from_secs(10), |t| {
            t.contains("listening")
        })?;
        Ok(server)
    }

    pub(crate) fn agent(&self, extra: &[&str]) -> Result<(Agent, Duration)> {
        let args = AgentArgs {
            stall_timeout: None,
            extra: extra.iter().map(|a| (*a).to_owned()).collect(),
            ..AgentArgs::default()
        };
        let t0 = std::time::Instant::now();
        let mut agent = Agent::start_with(&self.lab, &self.cgroup, &args)?;
        agent.wait_ready(Duration::from_mins(2))?;
        Ok((agent, t0.elapsed()))
    }

    /// How many sockets the agent's status lists, and its `sockets_full` counter.
    pub(crate) fn watched(agent: &Agent) -> Result<(usize, u64)> {
        let v = agent.status_json()?;
        let n = v["sockets"].as_array().map_or(0, Vec::len);
        Ok((n, v["sockets_full"].as_u64().unwrap_or(0)))
    }
}

fn sink(lab: &Lab, args: &[&str]) -> Result<Proc> {
    let mut all = vec!["sink"];
    all.extend_from_slice(args);
    let mut p = Proc::spawn("sink", lab.server.command(&bench_exe()?, &all))?;
    p.wait_stdout("the sink to listen", Duration::from_secs(10), |l| {
        l.contains("listening")
    })?;
    Ok(p)
}

/// This binary, which also is the helpers.
pub(crate) fn bench_exe() -> Result<String> {
    let exe = std::env::current_exe()?;
    exe.to_str().map(str::to_owned).context("non-UTF-8 path")
}
