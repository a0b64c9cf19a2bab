//! Which contenders run each row, how many trials it has, how many share a lab, and the
//! client's traffic.

use crate::cells::Scenario;
use crate::contender::Contender;

/// Trials per whole-path blip row (the full bench).
const BLIP_TRIALS: usize = 20;
/// Trials of the one-of-two blip row: its agent labs hold one client each.
const BLIP_ONE_OF_TWO_TRIALS: usize = 10;

impl Scenario {
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
    ///
    /// The blip rows run every contender: any of them may close a connection that would
    /// have recovered by itself, and each is timed against the kernel's own recovery.
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
    ///
    /// The blip rows (`crate::blip`) keep the full bench's added time modest: each lab lives
    /// through the blip, the kernel's own retransmission schedule after it and a settling
    /// time, and the one-of-two row's agent labs hold one client each (see
    /// `clients_per_lab`).
    pub fn default_trials(self, quick: bool) -> usize {
        if quick {
            return 3;
        }
        match self {
            Self::RestartedFlowOnly => 10,
            Self::Blip1s | Self::Blip3s | Self::Blip6s | Self::Blip15s => BLIP_TRIALS,
            Self::BlipOneOfTwo3s => BLIP_ONE_OF_TWO_TRIALS,
            _ => 20,
        }
    }

    /// Trials run side by side in one lab. Kernel and client defences act per socket, so ten
    /// share a lab; an agent may kill at most 6 sockets a minute by default, so its labs hold
    /// five, never more than one node's worth of kills. When the whole peer is gone (or one
    /// address of two, for a while) the agent kills every socket to it once any one of them
    /// shows trouble: trials sharing its lab would not be independent (the first client to
    /// send would detect for all), so each runs alone. A whole-path blip is met by a node's
    /// clients together (kubelet, kube-proxy, a CNI agent), and the agent's finding is about
    /// the path, not a socket: its five clients are a node's, each served again on its own
    /// socket's schedule. A restarted unit's lab holds one client: its unit.
    pub fn clients_per_lab(self, contender: Contender, quick: bool) -> usize {
        let peer_gone = matches!(
            self,
            Self::PeerGone1s | Self::PeerGone10s | Self::BlipOneOfTwo3s
        );
        match (quick, contender.agent().is_some()) {
            _ if self.restarts_unit() => 1,
            (_, true) if peer_gone => 1,
            (true, _) => 3,
            (false, true) => 5,
            (false, false) => 10,
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
