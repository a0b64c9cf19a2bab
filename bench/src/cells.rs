//! What the benchmark compares: the fault scenarios (rows) and the contenders (columns).

use std::net::IpAddr;
use std::time::Duration;

use lifeline_tests::{AgentArgs, ApiLab, api};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// api1 vanishes (every packet to and from it dropped); api2 still in DNS.
    PeerGone1s,
    PeerGone10s,
    /// Only this flow is dropped; api1 still accepts new connections.
    FlowOnly,
    /// A watch stream that carries nothing, its flow dropped.
    IdleWatch,
    /// DNS moves from api1 to api2 and api1 vanishes; the client only watches.
    ElbRotation,
}

impl Scenario {
    pub const ALL: [Self; 5] = [
        Self::PeerGone1s,
        Self::PeerGone10s,
        Self::FlowOnly,
        Self::IdleWatch,
        Self::ElbRotation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::PeerGone1s => "black hole, 1 s heartbeats",
            Self::PeerGone10s => "black hole, 10 s heartbeats",
            Self::FlowOnly => "flow-only black hole, 1 s heartbeats",
            Self::IdleWatch => "idle watch, flow black-holed",
            Self::ElbRotation => "ELB rotation, idle watch",
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            Self::PeerGone1s => "peer gone 1s",
            Self::PeerGone10s => "peer gone 10s",
            Self::FlowOnly => "flow only",
            Self::IdleWatch => "idle watch",
            Self::ElbRotation => "ELB rotation",
        }
    }

    /// The heartbeat interval; None: an idle watch stream.
    pub fn heartbeat(self) -> Option<Duration> {
        match self {
            Self::PeerGone1s | Self::FlowOnly => Some(Duration::from_secs(1)),
            Self::PeerGone10s => Some(Duration::from_secs(10)),
            Self::IdleWatch | Self::ElbRotation => None,
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

    /// kube-client's traffic: heartbeats only, or a watch that never sends (one event at
    /// the start, the next after an hour).
    pub fn client_args(self) -> Vec<String> {
        match self.heartbeat() {
            Some(hb) => vec![
                "--heartbeat".into(),
                format!("{}s", hb.as_secs()),
                "--watch-every".into(),
                "0".into(),
            ],
            None => ["--watch-only", "--watch-every", "3600"]
                .map(String::from)
                .to_vec(),
        }
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
    pub fn clients_per_lab(self, scenario: Scenario, quick: bool) -> usize {
        let peer_gone = matches!(scenario, Scenario::PeerGone1s | Scenario::PeerGone10s);
        match (quick, self.agent().is_some()) {
            (_, true) if peer_gone => 1,
            (true, _) => 3,
            (false, true) => 5,
            (false, false) => 10,
        }
    }
}
