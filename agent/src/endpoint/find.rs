//! One peer probe: what it found, and how (`find`).

use std::net::SocketAddr;

use super::connect::{Connect, ConnectAnswer};

/// What a peer probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Finding {
    /// A try was accepted.
    Alive,
    /// A try was refused: a live host with nothing listening, alive as far as the path goes.
    Refused,
    /// Every try timed out while another address of the endpoint accepted.
    Dead,
    /// Every try timed out and no other address accepted: the path, not the peer.
    PathDown,
    /// Any other error: proves nothing.
    Failed,
}

impl Finding {
    #[must_use]
    pub(super) const fn label(self) -> &'static str {
        match self {
            Self::Alive => "alive",
            Self::Refused => "refused",
            Self::Dead => "dead",
            Self::PathDown => "path-down",
            Self::Failed => "failed",
        }
    }
}

/// The probe of `peer`, with `others` (the endpoint's other addresses) tried at the same
/// time: `works` is told the moment one accepts, so a socket whose own evidence is in need
/// not wait for every try of its peer to time out to know the path works. The peer is dead
/// when every try timed out and another address accepted; the path is down when none did.
pub(super) async fn find(
    connect: &dyn Connect,
    peer: SocketAddr,
    others: Vec<SocketAddr>,
    works: impl FnOnce(SocketAddr),
) -> Finding {
    let others: Vec<SocketAddr> = others.into_iter().filter(|a| *a != peer).collect();
    let (mut tries, mut check) = (connect.probe(peer), connect.any_accepts(others));
    let (mut other, mut works) = (None, Some(works));
    let reach = loop {
        tokio::select! {
            r = &mut tries => break r,
            o = &mut check, if other.is_none() => {
                if let (Some(via), Some(tell)) = (o, works.take()) {
                    tell(via);
                }
                other = Some(o);
            }
        }
    };
    match reach {
        ConnectAnswer::Accepted => Finding::Alive,
        ConnectAnswer::Refused => Finding::Refused,
        ConnectAnswer::Failed => Finding::Failed,
        ConnectAnswer::TimedOut => match other {
            Some(o) => o,
            None => check.await,
        }
        .map_or(Finding::PathDown, |_| Finding::Dead),
    }
}
