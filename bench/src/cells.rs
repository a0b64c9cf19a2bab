//! What the benchmark compares: the fault scenarios (rows). The contenders (columns) are
//! `crate::contender`; which contenders run a row, and how many trials share a lab, is
//! `crate::lineup`.

use std::net::IpAddr;
use std::time::Duration;

use lifeline_tests::api;
use lifeline_tests::fixtures::proxy::ProxyKind;

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
    /// A whole-path blip: every packet to and from the only API address dropped for 1 s,
    /// then healed, DNS unchanged; 1 s heartbeats
    #[value(name = "blip-1s")]
    Blip1s,
    /// The same for 3 s
    #[value(name = "blip-3s")]
    Blip3s,
    /// The same for 6 s
    #[value(name = "blip-6s")]
    Blip6s,
    /// The same for 15 s
    #[value(name = "blip-15s")]
    Blip15s,
    /// api1 of two addresses in DNS black-holed both ways for 3 s, then back, DNS unchanged;
    /// the clients start on api1; 1 s heartbeats
    #[value(name = "blip-one-of-two-3s")]
    BlipOneOfTwo3s,
}

/// A blip row's fault: the API address api1 black-holed both ways for `len`, then healed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlipSpec {
    pub len: Duration,
    /// api2 is in DNS beside api1 (and stays reachable): a client moved there early is
    /// served while api1 is still away.
    pub one_of_two: bool,
}

impl Scenario {
    pub const ALL: [Self; 15] = [
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
        Self::Blip1s,
        Self::Blip3s,
        Self::Blip6s,
        Self::Blip15s,
        Self::BlipOneOfTwo3s,
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
            Self::Blip1s => "whole-path blip of 1 s (the only API address), 1 s heartbeats",
            Self::Blip3s => "whole-path blip of 3 s (the only API address), 1 s heartbeats",
            Self::Blip6s => "whole-path blip of 6 s (the only API address), 1 s heartbeats",
            Self::Blip15s => "whole-path blip of 15 s (the only API address), 1 s heartbeats",
            Self::BlipOneOfTwo3s => {
                "one address of two black-holed for 3 s, then back, 1 s heartbeats"
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
            Self::Blip1s => "blip 1s",
            Self::Blip3s => "blip 3s",
            Self::Blip6s => "blip 6s",
            Self::Blip15s => "blip 15s",
            Self::BlipOneOfTwo3s => "blip one of two 3s",
        }
    }

    /// The heartbeat interval; None: an idle watch stream.
    pub fn heartbeat(self) -> Option<Duration> {
        match self {
            Self::PeerGone1s
            | Self::FlowOnly
            | Self::RestartedFlowOnly
            | Self::Blip1s
            | Self::Blip3s
            | Self::Blip6s
            | Self::Blip15s
            | Self::BlipOneOfTwo3s => Some(Duration::from_secs(1)),
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
            Self::PeerGone1s | Self::PeerGone10s | Self::BlipOneOfTwo3s => {
                vec![api(1, false), api(2, false)]
            }
            _ => vec![api(1, false)],
        }
    }

    /// The node-local proxy the client dials, if any (`lifeline_tests::fixtures::proxy`).
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

    /// A blip row's fault (None: a row whose fault stays, measured by detection and outage).
    pub fn blip(self) -> Option<BlipSpec> {
        let (secs, one_of_two) = match self {
            Self::Blip1s => (1, false),
            Self::Blip3s => (3, false),
            Self::Blip6s => (6, false),
            Self::Blip15s => (15, false),
            Self::BlipOneOfTwo3s => (3, true),
            _ => return None,
        };
        Some(BlipSpec {
            len: Duration::from_secs(secs),
            one_of_two,
        })
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
