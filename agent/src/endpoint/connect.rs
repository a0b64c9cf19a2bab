//! TCP connect checks: the peer probe and the healthy-endpoint check.
//!
//! A fresh connection says what the network does *now*, independent of the old flow: a
//! timeout means nothing answers at that address, a refusal means a host answers but nothing
//! listens, an accepted connection (closed at once, no byte sent) means the peer is alive.

use std::{future::Future, net::SocketAddr, pin::Pin, time::Duration};

use tokio::{net::TcpStream, time::timeout};

/// A connect check on its way: boxed, so the checks can sit behind a trait object.
pub(crate) type Connecting<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The connect-based parts the loop relies on: the peer probe's tries and the guard's
/// check. `Network` makes real connections; the daemon's sweep tests answer from a table.
pub(crate) trait Connect: Send + Sync {
    /// The peer probe of `peer` (`probe` below).
    fn probe(&self, peer: SocketAddr) -> Connecting<ConnectAnswer>;

    /// The first of `targets` to accept a connection within 1 s (`any_accepts` below).
    fn any_accepts(&self, targets: Vec<SocketAddr>) -> Connecting<Option<SocketAddr>>;
}

/// Real connections, from this network namespace.
pub(crate) struct Network;

impl Connect for Network {
    fn probe(&self, peer: SocketAddr) -> Connecting<ConnectAnswer> {
        Box::pin(probe(peer))
    }

    fn any_accepts(&self, targets: Vec<SocketAddr>) -> Connecting<Option<SocketAddr>> {
        Box::pin(async move { any_accepts(&targets).await })
    }
}

/// How long one try waits for the handshake.
pub(crate) const TRY_TIMEOUT: Duration = Duration::from_secs(1);
/// A peer is dead only when this many independent handshakes all time out. Under random
/// loss p each way one try fails with q = 1 - (1-p)^2; eleven keep a live peer's odds of being
/// judged dead at q^11 (8e-12 at 5 % loss, 1e-8 at 10 %) per probe, and a probe is asked for
/// only on trouble (docs/ARCHITECTURE.md, "Idle connections").
pub(crate) const PROBE_TRIES: u32 = 11;
/// Tries start this far apart and stop at the first answer: a live peer costs one
/// connection, a dead one a verdict about 1.5 s after the start.
const STAGGER: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnectAnswer {
    Accepted,
    Refused,
    TimedOut,
    /// Any other error (no route, ...): proves nothing about the peer.
    Failed,
}

/// One connection attempt with the 1 s timeout.
pub(crate) async fn try_connect(peer: SocketAddr) -> ConnectAnswer {
    match timeout(TRY_TIMEOUT, TcpStream::connect(peer)).await {
        Ok(Ok(_stream)) => ConnectAnswer::Accepted,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => ConnectAnswer::Refused,
        Ok(Err(_)) => ConnectAnswer::Failed,
        Err(_) => ConnectAnswer::TimedOut,
    }
}

/// The peer probe: up to `PROBE_TRIES` tries, `STAGGER` apart; the first that does not time
/// out is the answer, and the peer is dead (`TimedOut`) only when every one timed out.
pub(crate) async fn probe(peer: SocketAddr) -> ConnectAnswer {
    let mut tries = tokio::task::JoinSet::new();
    let mut started = 0;
    let mut next = tokio::time::interval(STAGGER);
    loop {
        tokio::select! {
            _ = next.tick(), if started < PROBE_TRIES => {
                tries.spawn(try_connect(peer));
                started += 1;
            }
            Some(r) = tries.join_next() => match r {
                Ok(ConnectAnswer::TimedOut) => {}
                // Dropping the set aborts the tries still waiting.
                Ok(other) => return other,
                Err(_) => return ConnectAnswer::Failed,
            },
            else => return ConnectAnswer::TimedOut,
        }
    }
}

/// The first of `targets` to accept a connection within 1 s, if any does.
pub(crate) async fn any_accepts(targets: &[SocketAddr]) -> Option<SocketAddr> {
    let mut set = tokio::task::JoinSet::new();
    for t in targets {
        let t = *t;
        set.spawn(async move { (t, try_connect(t).await) });
    }
    while let Some(r) = set.join_next().await {
        if let Ok((t, ConnectAnswer::Accepted)) = r {
            return Some(t);
        }
    }
    None
}
