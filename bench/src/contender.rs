//! The contenders (the report's columns): the kernel alone, a client's own options, the
//! thread's dig script, and lifeline at its defaults and with a tight stall timeout.

use lifeline_tests::{AgentArgs, ApiLab};

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
}
