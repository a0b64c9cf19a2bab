//! The metrics server's bounds on a real loopback socket: `MAX_CLIENTS` idle clients hold
//! every place, the next is closed at once and counted, the idle ones are dropped at the
//! head deadline (counted), and a scrape is answered again once they are gone.

use std::time::{Duration, Instant};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpStream,
};

use super::*;

fn counter(m: &Metrics, name: &str) -> String {
    let series = format!("lifeline_{name}_total{{server=\"metrics\"}} ");
    m.encode()
        .lines()
        .find_map(|l| l.strip_prefix(&series).map(str::to_owned))
        .unwrap_or_else(|| panic!("no {series}in {}", m.encode()))
}

/// Reads until the server closes; how long that took.
async fn closed_after(conn: &mut TcpStream) -> Duration {
    let t0 = Instant::now();
    let mut buf = [0u8; 64];
    // An unread request makes the close a reset: either way the server has let go.
    while let Ok(n @ 1..) = conn.read(&mut buf).await {
        assert!(n <= buf.len());
    }
    t0.elapsed()
}

#[tokio::test]
async fn idle_clients_are_capped_and_timed_out() {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let metrics = Metrics::new();
    let server = tokio::spawn(accept_loop(
        TcpListener::from_std(std_listener).unwrap(),
        metrics.clone(),
    ));

    let mut idle = Vec::new();
    for _ in 0..MAX_CLIENTS {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // Accepted in the listen queue's order: this one comes after every idle one.
    let mut late = TcpStream::connect(addr).await.unwrap();
    let waited = closed_after(&mut late).await;
    assert!(waited < HEAD_TIMEOUT / 2, "closed after {waited:?}");
    assert_eq!(counter(&metrics, "server_refused"), "1");

    for conn in &mut idle {
        let waited = closed_after(conn).await;
        assert!(waited < HEAD_TIMEOUT * 2, "an idle client held {waited:?}");
    }
    assert_eq!(
        counter(&metrics, "server_timeouts"),
        MAX_CLIENTS.to_string()
    );

    let mut scrape = TcpStream::connect(addr).await.unwrap();
    scrape
        .write_all(b"GET /metrics HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    scrape.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(
        answer.contains("lifeline_server_refused_total{server=\"metrics\"} 1\n"),
        "{answer}"
    );
    assert_eq!(counter(&metrics, "server_accept_errors"), "0");
    server.abort();
}
