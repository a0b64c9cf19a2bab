//! The transport for the metrics: a minimal HTTP/1.1 `GET /metrics` server on tokio. The
//! exposition itself comes from prometheus-client (report/metrics/mod.rs). One request per
//! connection, bounded in size and time, so a slow or hostile client cannot pin the agent.

use std::{collections::HashSet, net::SocketAddr, time::Duration};

use anyhow::{Context as _, Result};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::watch,
    task::JoinHandle,
};

use super::Metrics;
use crate::report::status::Snapshot;

const MAX_REQUEST: usize = 8 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Listen (now, so that a bad address fails at start) and serve `metrics` in the
/// background; the socket gauges and the probe's counters follow `snapshots`.
///
/// # Errors
/// When the address cannot be bound.
pub fn serve(
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
    let server = tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            let metrics = metrics.clone();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(REQUEST_TIMEOUT, answer(conn, &metrics)).await;
            });
        }
    });
    Ok(vec![gauges, server])
}

async fn answer(mut conn: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
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
    conn.write_all(response.as_bytes()).await?;
    conn.shutdown().await
}
