//! The client-side defences the benchmark compares lifeline with, off unless asked for:
//! - `--h2-ping READ_IDLE,TIMEOUT`: client-go's HTTP/2 health check (`ReadIdleTimeout` 30 s,
//!   `PingTimeout` 15 s): a PING after `READ_IDLE` without a frame read, the connection closed
//!   when no answer comes within TIMEOUT. hyper schedules its PING from the last read, which is
//!   exactly client-go's read-idle rule; `while_idle` because client-go pings without streams.
//! - `--user-timeout D`: the application sets `TCP_USER_TIMEOUT` on its socket, so the kernel
//!   fails the connection once sent data stays unacknowledged for D.
//! - `--go-keepalive S` (30 by default, like kubelet's and client-go's dialer; 0: none): what
//!   Go's `net.Dialer` does right after connect returns: keepalive on, idle and interval S,
//!   count 9 (Go 1.23+), one `setsockopt` each in that order.

use std::time::Duration;

use http_body_util::Empty;
use hyper::body::Bytes;
use hyper::client::conn::http2::{self, Connection, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use lifeline_tests::parse_duration;
use tokio::net::TcpStream;

type Io = TokioIo<TcpStream>;
type Pair = (
    SendRequest<Empty<Bytes>>,
    Connection<Io, Empty<Bytes>, TokioExecutor>,
);

/// `READ_IDLE,TIMEOUT`, e.g. `30s,15s`.
pub(crate) fn parse_h2_ping(s: &str) -> Result<(Duration, Duration), String> {
    let (idle, timeout) = s
        .split_once(',')
        .ok_or_else(|| format!("{s:?}: want READ_IDLE,TIMEOUT, e.g. 30s,15s"))?;
    let parse = |p: &str| parse_duration(p).map_err(|e| format!("{p:?}: {e}"));
    Ok((parse(idle)?, parse(timeout)?))
}

/// The HTTP/2 handshake, with the PING health check when `h2_ping` is set.
pub(crate) async fn handshake(
    h2_ping: Option<(Duration, Duration)>,
    io: Io,
) -> hyper::Result<Pair> {
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder.timer(TokioTimer::new());
    if let Some((read_idle, timeout)) = h2_ping {
        builder
            .keep_alive_interval(read_idle)
            .keep_alive_timeout(timeout)
            .keep_alive_while_idle(true);
    }
    builder.handshake(io).await
}

/// Go's keepalive on a connected socket (`--go-keepalive`); 0 leaves it off.
pub(crate) fn apply_go_keepalive(stream: &TcpStream, secs: u64) {
    if secs == 0 {
        return;
    }
    let t = Duration::from_secs(secs);
    // socket2 sets SO_KEEPALIVE, then TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT: Go's order.
    let ka = socket2::TcpKeepalive::new()
        .with_time(t)
        .with_interval(t)
        .with_retries(9);
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_keepalive(&ka) {
        crate::report::emit(&crate::report::Report::io("keepalive", &e, 0));
    }
}

/// `TCP_USER_TIMEOUT` on a connected socket (it applies from the next unacknowledged send).
pub(crate) fn apply_user_timeout(stream: &TcpStream, timeout: Option<Duration>) {
    if let Some(t) = timeout
        && let Err(e) = socket2::SockRef::from(stream).set_tcp_user_timeout(Some(t))
    {
        eprintln!("kube-client: TCP_USER_TIMEOUT: {e}");
    }
}
