//! How a blip is told from a death. A socket's own unanswered transmissions say that
//! nothing came back; they cannot say whether the flow died (a balancer lost its state, a
//! peer went away) or the whole path to the endpoint paused (a link flap, a failover, a VM
//! paused for migration) and will come back by itself. Killing in the second case only makes
//! every client re-dial through the same path the moment it returns: a reconnect storm, and
//! never sooner service.
//!
//! So a stalled or silent endpoint socket is killed only when a peer probe that began after
//! its last sign of life shows the path working at the same time: its peer accepted a fresh
//! connection (`PeerProbe::Alive`: the flow is dead, not the path), or another address of
//! the endpoint accepted one while the peer's tries were still out (`PeerProbe::PathWorks`,
//! a round trip after the probe began; `PeerProbe::Dead` once every try of the peer timed
//! out). When nothing answered (`PathDown`), the loop has marked the path down and the kill
//! goes to the guard, which holds it (logged as a hold) while no address accepts; the check
//! that finds the path back is a return, and the batch it would have let through is
//! dropped: the socket's verdict is earned again from transmissions after the return
//! (`path.rs`). While the probe runs and nothing has answered, the kill waits for it; the
//! probe is asked for at the socket's first sign of trouble, so when only the flow or the
//! peer died its first answer (one round trip) is in long before the verdict and costs
//! nothing. A socket that is not the endpoint's has no probe and is judged by its own
//! evidence alone.

use std::time::Duration;

use super::{Mono, PeerProbe, ProbeAsk, Socket, TcpInfo, life};

/// While the probe runs, the socket is looked at again this soon.
pub const PROBE_RECHECK: Duration = Duration::from_millis(100);

/// Why a confirmed death is not acted on yet, and what the loop should do meanwhile.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Wait {
    pub probe: Option<ProbeAsk>,
    pub wake: Option<Duration>,
}

/// `None`: the probe has answered (or the socket is not the endpoint's): on to the guard.
pub(crate) fn wait_for_path(s: &Socket<'_>, info: &TcpInfo, at: Mono) -> Option<Wait> {
    s.member?;
    let life = life(info, at);
    match s.peer.and_then(|p| p.since(life)) {
        // The path works, or is down and the guard holds until it is back (a return).
        Some(
            PeerProbe::Alive { .. }
            | PeerProbe::PathWorks { .. }
            | PeerProbe::Dead(_)
            | PeerProbe::PathDown { .. },
        ) => None,
        Some(PeerProbe::Running { .. }) => Some(Wait {
            probe: None,
            wake: Some(PROBE_RECHECK),
        }),
        None => Some(Wait {
            probe: Some(ProbeAsk {
                why: "confirming a death: does the path work?",
                after: Some(life),
            }),
            wake: Some(PROBE_RECHECK),
        }),
    }
}
