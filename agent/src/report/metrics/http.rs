//! The transport for the metrics: a minimal HTTP/1.1 `GET /metrics` server on tokio. The
//! exposition itself comes from prometheus-client (report/metrics/mod.rs). One request per
//! connection, bounded in number, size and time (report/gate.rs), so a slow or hostile client
//! cannot pin the agent: at most `MAX_CLIENTS` at once, each given `HEAD_TIMEOUT` to send at
//! most `MAX_REQUEST` bytes of request head and `WRITE_TIMEOUT` to take the answer.

use std::{collections::HashSet, net::SocketAddr, time::Duration};

use anyhow::{Context as _, Result};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::watch,
    task::JoinHandle,
    time::timeout,
};

use super::{Metrics, servers};
use crate::report::status::Snapshot;

/// Clients served at once; Prometheus needs one (two during a failover of its pair).
pub(crate) const MAX_CLIENTS: usize = 16;
const MAX_REQUEST: usize = 8 * 1024;
/// A scraper sends its request at once; an idle connection is dropped after this.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// The whole answer (some kilobytes) written within this.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Listen (now, so that a bad address fails at start) and serve `metrics` in the
/// background; the socket gauges and the probe's counters follow `snapshots`.
///
/// # Errors
/// When the address cannot be bound.
pub(crate) fn serve(
    addr: SocketAddr,
    mut snapshots: watch::Receiver<Snapshot>,
    metrics: Metrics,
) -> Result<Vec<JoinHandle<()>>> {
    let std_listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("cannot serve metrics on {addr}"))?;
    std_listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(std_listener)?;
    tracing::info!(%addr, "serving Prometheus metrics at /metrics");
    let observed = metrics.clone();
    let gauges = tokio::spawn(async move {
        let mut seen = HashSet::new();
        while snapshots.changed().await.is_ok() {
            observed.observe(&snapshots.borrow_and_update(), &mut seen);
        }
    });
    let server = tokio::spawn(accept_loop(listener, metrics));
    Ok(vec![gauges, server])
}

/// Accepts for ever: a failed accept is counted and paused on, never the end.
async fn accept_loop(listener: TcpListener, metrics: Metrics) {
    let gate = metrics.gate(servers::METRICS, MAX_CLIENTS);
    loop {
        let conn = match listener.accept().await {
            Ok((conn, _)) => conn,
            Err(e) => {
                tokio::time::sleep(gate.accept_failed(&e)).await;
                continue;
            }
        };
        // Past the cap the connection is dropped here: closed at once.
        let Some(permit) = gate.admit() else { continue };
        let (metrics, gate) = (metrics.clone(), gate.clone());
        tokio::spawn(async move {
            if answer(conn, &metrics).await == RequestEnd::TimedOut {
                gate.timed_out();
            }
            drop(permit);
        });
    }
}

#[derive(Debug, PartialEq, Eq)]
enum RequestEnd {
    Answered,
    TimedOut,
    /// The client went away or the connection failed: nothing to count.
    Failed,
}

async fn answer(mut conn: TcpStream, metrics: &Metrics) -> RequestEnd {
    let head = match timeout(HEAD_TIMEOUT, read_head(&mut conn)).await {
        Err(_) => return RequestEnd::TimedOut,
        Ok(Err(_)) => return RequestEnd::Failed,
        Ok(Ok(head)) => head,
    };
    let mut parts = head.split_whitespace();
    let (status, ctype, body) = match (parts.next(), parts.next()) {
        (Some("GET"), Some("/metrics")) => ("200 OK", CONTENT_TYPE, metrics.encode()),
        (Some("GET"), _) => ("404 Not Found", "text/plain", "try /metrics\n".to_owned()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET /metrics only\n".to_owned(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let written = async {
        conn.write_all(response.as_bytes()).await?;
        conn.shutdown().await
    };
    match timeout(WRITE_TIMEOUT, written).await {
        Err(_) => RequestEnd::TimedOut,
        Ok(Err(_)) => RequestEnd::Failed,
        Ok(Ok(())) => RequestEnd::Answered,
    }
}

/// The request head: up to its blank line, the peer's end, or `MAX_REQUEST` bytes.
async fn read_head(conn: &mut TcpStream) -> std::io::Result<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
