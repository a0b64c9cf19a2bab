//! TCP connect checks: the peer probe and the healthy-endpoint check.
//!
//! A fresh connection says what the network does *now*, independent of the old flow: a
//! timeout means nothing answers at that address, a refusal means a host answers but nothing
//! listens, an accepted connection (closed at once, no byte sent) means the peer is alive.

use std::{net::SocketAddr, time::Duration};

use tokio::{net::TcpStream, time::timeout};

/// How long one try waits for the handshake.
pub const TRY_TIMEOUT: Duration = Duration::from_secs(1);
/// The second try starts this long after the first: two independent SYNs (a single lost
/// one proves nothing), and a verdict 1.25 s after the start instead of 2 s.
const SECOND_TRY_AFTER: Duration = Duration::from_millis(250);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    Accepted,
    Refused,
    TimedOut,
    /// Any other error (no route, ...): proves nothing about the peer.
    Failed,
}

impl Reach {
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Accepted => "alive",
            Self::Refused => "refused",
            Self::TimedOut => "dead",
            Self::Failed => "failed",
        }
    }
}

/// One connection attempt with the 1 s timeout.
pub async fn try_connect(peer: SocketAddr) -> Reach {
    match timeout(TRY_TIMEOUT, TcpStream::connect(peer)).await {
        Ok(Ok(_stream)) => Reach::Accepted,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Reach::Refused,
        Ok(Err(_)) => Reach::Failed,
        Err(_) => Reach::TimedOut,
    }
}

/// The peer probe: two tries; the peer is dead (`TimedOut`) only when both time out.
pub async fn probe(peer: SocketAddr) -> Reach {
    let second = async {
        tokio::time::sleep(SECOND_TRY_AFTER).await;
        try_connect(peer).await
    };
    let (a, b) = tokio::join!(try_connect(peer), second);
    for r in [Reach::Accepted, Reach::Refused, Reach::Failed] {
        if a == r || b == r {
            return r;
        }
    }
    Reach::TimedOut
}

/// Whether at least one of `targets` accepts a connection within 1 s.
pub async fn any_accepts(targets: &[SocketAddr]) -> bool {
    let mut set = tokio::task::JoinSet::new();
    for t in targets {
        set.spawn(try_connect(*t));
    }
    while let Some(r) = set.join_next().await {
        if matches!(r, Ok(Reach::Accepted)) {
            return true;
        }
    }
    false
}
