//! What the benchmark compares: the fault scenarios (rows) and the contenders (columns).

use std::net::IpAddr;
use std::time::Duration;

use lifeline_tests::proxy::ProxyKind;
use lifeline_tests::{AgentArgs, ApiLab, api};

/// The rows. The doc comments are `--scenario`'s help; its values are the kebab-case names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// api1 vanishes (every packet to and from it dropped), api2 still in DNS; 1 s heartbeats
    #[value(name = "peer-gone-1s")]
    PeerGone1s,
    /// The same with 10 s heartbeats
    #[value(name = "peer-gone-10s")]
    PeerGone10s,
    /// Only the client's flow is dropped; api1 still accepts new connections
    FlowOnly,
    /// flow-only for kubelet.service, the agent targeting the unit's cgroup: the unit is
    /// restarted once the agent is ready (systemd re-creates its cgroup), then its new
    /// connection's flow is dropped
    RestartedFlowOnly,
    /// A watch stream that carries nothing, its flow dropped; the client sets Go's keepalive
    /// after connect (30 s, kubelet's)
    IdleWatch,
    /// The same with a 15 s Go keepalive (Go's default dialer)
    #[value(name = "idle-watch-go15")]
    IdleWatchGo15,
    /// The same with a client that sets no keepalive at all
    IdleWatchNoKeepalive,
    /// DNS moves from api1 to api2 and api1 vanishes; the client only watches
    ElbRotation,
    /// The client dials 127.0.0.1:6443, a node-local nginx (kubespray's) in front of api1
    /// and api2; the proxy's upstream flow is dropped; 10 s heartbeats
    ProxyNginx,
    /// The same through a node-local haproxy
    ProxyHaproxy,
}

impl Scenario {
    pub const ALL: [Self; 10] = [
        Self::PeerGone1s,
        Self::PeerGone10s,
        Self::FlowOnly,
        Self::RestartedFlowOnly,
        Self::IdleWatch,
        Self::IdleWatchGo15,
        Self::IdleWatchNoKeepalive,
        Self::ElbRotation,
        Self::ProxyNginx,
        Self::ProxyHaproxy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::PeerGone1s => "black hole, 1 s heartbeats",
            Self::PeerGone10s => "black hole, 10 s heartbeats",
            Self::FlowOnly => "flow-only black hole, 1 s heartbeats",
            Self::RestartedFlowOnly => {
                "kubelet restarted, then its new connection black-holed (flow only, 1 s heartbeats)"
            }
            Self::IdleWatch => "idle watch, flow black-holed (Go client, keepalive 30 s)",
            Self::IdleWatchGo15 => "idle watch, flow black-holed (Go client, keepalive 15 s)",
            Self::IdleWatchNoKeepalive => "idle watch, flow black-holed (client sets no keepalive)",
            Self::ElbRotation => "ELB rotation, idle watch",
            Self::ProxyNginx => {
                "through a node-local nginx (flow black hole on the upstream, 10 s heartbeats)"
            }
            Self::ProxyHaproxy => {
                "through a node-local haproxy (flow black hole on the upstream, 10 s heartbeats)"
            }
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            Self::PeerGone1s => "peer gone 1s",
            Self::PeerGone10s => "peer gone 10s",
            Self::FlowOnly => "flow only",
            Self::RestartedFlowOnly => "restarted, flow only",
            Self::IdleWatch => "idle watch",
            Self::IdleWatchGo15 => "idle watch go15",
            Self::IdleWatchNoKeepalive => "idle watch no ka",
            Self::ElbRotation => "ELB rotation",
            Self::ProxyNginx => "via nginx",
            Self::ProxyHaproxy => "via haproxy",
        }
    }

    /// The heartbeat interval; None: an idle watch stream.
    pub fn heartbeat(self) -> Option<Duration> {
        match self {
            Self::PeerGone1s | Self::FlowOnly | Self::RestartedFlowOnly => {
                Some(Duration::from_secs(1))
            }
            Self::PeerGone10s | Self::ProxyNginx | Self::ProxyHaproxy => {
                Some(Duration::from_secs(10))
            }
            Self::IdleWatch
            | Self::IdleWatchGo15
            | Self::IdleWatchNoKeepalive
            | Self::ElbRotation => None,
        }
    }

    /// What dnsmasq answers before the fault. Clients dial in sorted order, so all start on
    /// api1; with the peer gone they find api2 on their re-dial, as on a multi-master cluster.
    pub fn initial_dns(self) -> Vec<IpAddr> {
        match self {
            Self::PeerGone1s | Self::PeerGone10s => vec![api(1, false), api(2, false)],
            _ => vec![api(1, false)],
        }
    }

    /// The node-local proxy the client dials, if any (`lifeline_tests::proxy`).
    pub fn proxy(self) -> Option<ProxyKind> {
        match self {
            Self::ProxyNginx => Some(ProxyKind::Nginx),
            Self::ProxyHaproxy => Some(ProxyKind::Haproxy),
            _ => None,
        }
    }

    /// The client runs as `kubelet.service` of its own systemd manager, restarted once the
    /// agent is ready (one client per lab).
    pub fn restarts_unit(self) -> bool {
        self == Self::RestartedFlowOnly
    }

    /// The contenders of this row. What the restart changes is which cgroup kubelet's
    /// sockets are born in, which only an agent that selects sockets by cgroup can get
    /// wrong: so that row compares the agent at its defaults with the kernel alone. (Client
    /// options act per socket whatever the cgroup; the dig script restarts the client
    /// itself, which for a unit would be a `systemctl restart`.)
    ///
    /// Behind a proxy the question is lifeline against no agent and against the client's
    /// own HTTP/2 ping (client-side defences act on the loopback hop, which never stalls).
    ///
    /// The two client-keepalive variants of the idle row only ask what lifeline does with a
    /// different client, so they compare it with the kernel alone too.
    pub fn contenders(self) -> &'static [Contender] {
        if self.proxy().is_some() {
            return &[Contender::NoAgent, Contender::H2Ping, Contender::Lifeline];
        }
        if self.restarts_unit() || matches!(self, Self::IdleWatchGo15 | Self::IdleWatchNoKeepalive)
        {
            &[Contender::NoAgent, Contender::Lifeline]
        } else {
            &Contender::ALL
        }
    }

    /// Trials per cell unless `--trials` says otherwise. The restarted row runs one trial
    /// per lab (a manager and a unit each), its kernel-defaults labs sitting out the cap:
    /// half the trials keep the full bench within its time and still give a p90.
    pub fn default_trials(self, quick: bool) -> usize {
        match (quick, self.restarts_unit()) {
            (true, _) => 3,
            (false, true) => 10,
            (false, false) => 20,
        }
    }

    /// kube-client's traffic: heartbeats only, or a watch that never sends (one event at
    /// the start, the next after an hour).
    pub fn client_args(self) -> Vec<String> {
        if let Some(hb) = self.heartbeat() {
            return vec![
                "--heartbeat".into(),
                format!("{}s", hb.as_secs()),
                "--watch-every".into(),
                "0".into(),
            ];
        }
        let ka = match self {
            Self::IdleWatchGo15 => "15",
            Self::IdleWatchNoKeepalive => "0",
            _ => "30",
        };
        [
            "--watch-only",
            "--watch-every",
            "3600",
            "--go-keepalive",
            ka,
        ]
        .map(String::from)
        .to_vec()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contender {
    NoAgent,
    UserTimeout,
    H2Ping,
    DigScript,
    Lifeline,
    LifelineTight,
}

impl Contender {
    pub const ALL: [Self; 6] = [
        Self::NoAgent,
        Self::UserTimeout,
        Self::H2Ping,
        Self::DigScript,
        Self::Lifeline,
        Self::LifelineTight,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::NoAgent => "kernel defaults",
            Self::UserTimeout => "TCP_USER_TIMEOUT 10s",
            Self::H2Ping => "HTTP/2 PING 30s/15s",
            Self::DigScript => "dig script",
            Self::Lifeline => "lifeline",
            Self::LifelineTight => "lifeline 3s",
        }
    }

    /// What the contender adds to the client's command line.
    pub fn client_args(self) -> Vec<String> {
        let args: &[&str] = match self {
            Self::UserTimeout => &["--user-timeout", "10s"],
            Self::H2Ping => &["--h2-ping", "30s,15s"],
            _ => &[],
        };
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    /// The agent to run, if any: the endpoint and the lab's DNS, nothing else tuned except
    /// the tight contender's stall timeout.
    pub fn agent(self) -> Option<AgentArgs> {
        match self {
            Self::Lifeline => Some(ApiLab::agent_args(None, &[])),
            Self::LifelineTight => Some(ApiLab::agent_args(Some("3s"), &[])),
            _ => None,
        }
    }

    /// Trials run side by side in one lab. Kernel and client defences act per socket, so ten
    /// share a lab; an agent may kill at most 6 sockets a minute by default, so its labs hold
    /// five, never more than one node's worth of kills. When the whole peer is gone the agent
    /// kills every socket to it once any one of them shows trouble: trials sharing its lab
    /// would not be independent (the first client to send would detect for all), so each
    /// runs alone.
    /// A restarted unit's lab holds one client: its unit.
    pub fn clients_per_lab(self, scenario: Scenario, quick: bool) -> usize {
        let peer_gone = matches!(scenario, Scenario::PeerGone1s | Scenario::PeerGone10s);
        match (quick, self.agent().is_some()) {
            _ if scenario.restarts_unit() => 1,
            (_, true) if peer_gone => 1,
            (true, _) => 3,
            (false, true) => 5,
            (false, false) => 10,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum as _;

    use super::Scenario;

    /// `cargo xtask bench --help` lists the rows by hand (xtask cannot depend on this crate).
    #[test]
    fn xtask_usage_names_every_row() {
        let source = include_str!("../../xtask/src/main.rs");
        let usage = source
            .split_once("const USAGE: &str = \"")
            .and_then(|(_, rest)| rest.split_once("\";"))
            .expect("xtask's USAGE")
            .0;
        let words: Vec<&str> = usage
            .split(|c: char| c.is_whitespace() || c == ',')
            .collect();
        for s in Scenario::value_variants() {
            let name = s.to_possible_value().expect("no skipped rows");
            assert!(
                words.contains(&name.get_name()),
                "xtask's usage does not name the row {}",
                name.get_name()
            );
        }
    }
}
