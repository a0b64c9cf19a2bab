//! The fleet's four contenders: the client alone, the thread's dig script, kubelet's own
//! close-all remedy, and lifeline. Each gets its own nodes in the same fleet, so all four
//! live through the very same fault at the very same moment.

use lifeline_tests::infra::api_addrs::DNS_V4;
use lifeline_tests::{API_NAME, AgentArgs, ApiLab};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Contender {
    NoAgent,
    DigScript,
    CloseAll,
    Lifeline,
}

impl Contender {
    pub(super) const ALL: [Self; 4] = [
        Self::NoAgent,
        Self::DigScript,
        Self::CloseAll,
        Self::Lifeline,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::NoAgent => "no agent",
            Self::DigScript => "dig script (3 s)",
            Self::CloseAll => "close-all on 2nd failed heartbeat",
            Self::Lifeline => "lifeline (defaults)",
        }
    }

    /// The kubelet-like client: a heartbeat every 10 s and one watch on one HTTP/2
    /// connection, a random address order per dial (round-robin DNS), re-resolving and
    /// re-dialing on errors. The close-all client gives a heartbeat 10 s (kubelet's node
    /// status timeout) and closes the connection on the second failure in a row.
    pub(super) fn client_args(self) -> Vec<String> {
        let mut args: Vec<String> = [
            "--server",
            API_NAME,
            "--dns-server",
            &DNS_V4.to_string(),
            "--heartbeat",
            "10s",
            "--watch-every",
            "15",
            "--shuffle",
            "--lifetime",
            "20m",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        if self == Self::CloseAll {
            args.extend(["--request-timeout", "10s", "--close-after", "2"].map(str::to_owned));
        }
        args
    }

    /// The agent's arguments for a lifeline node: every tuning at its default; only the
    /// node's wiring is given (the endpoint and its DNS server, and the default target set:
    /// the client's cgroup, standing for kubelet.service, plus the endpoint's clients).
    pub(super) fn agent_args() -> AgentArgs {
        let mut a = ApiLab::agent_args(None, &["--endpoint-clients"]);
        a.ports = "443,6443".into();
        a
    }
}
