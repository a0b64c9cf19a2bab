//! kube-client: a kubelet-like client of the lab's API servers. One long-lived HTTP/2
//! cleartext connection to the name `--server` (h2c, prior knowledge), carrying
//! - a heartbeat: `GET /healthz` every `--heartbeat` (the node's lease / status update), and
//! - a watch: `GET /watch?every=N`, a stream that receives an event every N seconds;
//!
//! with `--watch-only`, only the watch (it sends nothing after its request). On any error it
//! does what client-go does: resolve the name again (a fresh query each time, nothing
//! cached, through `--dns-server`) and re-dial.
//!
//! Prints one JSON line per event on stdout, like lab-client: `resolved` {addrs},
//! `connected` {peer, `local_port`} for every connection (then `redialed` after a re-dial),
//! `ok` {seq, `rtt_ms`} per heartbeat, `watch-event` {seq}, `error` {op, errno, error}, `done`.
//! There is no HTTP/2 ping and no request timeout by default, so a black-holed connection
//! hangs visibly, as it does for a client that relies on the kernel alone.

use std::net::IpAddr;
use std::time::Duration;

use clap::Parser;
use lifeline_tests::parse_duration;

mod calls;
mod dial;
#[path = "../lab-client/report.rs"]
mod report;
mod tuning;
use report::{Report, emit};

#[derive(Parser)]
#[command(about = "kubelet-like HTTP/2 client for the lifeline lab")]
pub struct Args {
    /// The API server's name, resolved on every (re-)dial.
    #[arg(long, default_value = "api.lab.test")]
    server: String,
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// The DNS server to ask (UDP port 53).
    #[arg(long)]
    dns_server: IpAddr,
    /// A hosts file looked in first, on every dial, as glibc's `files dns` (a name it lists
    /// is never asked of DNS).
    #[arg(long)]
    hosts_file: Option<std::path::PathBuf>,
    /// Heartbeat interval.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    heartbeat: Duration,
    /// Seconds between the watch stream's events; 0: no watch.
    #[arg(long, default_value_t = 5)]
    watch_every: u64,
    /// Only the watch stream: no heartbeats.
    #[arg(long)]
    watch_only: bool,
    /// Give up on one heartbeat after this long (an error, then re-dial).
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    request_timeout: Duration,
    /// Timeout of one TCP connect to one address.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    connect_timeout: Duration,
    /// client-go's HTTP/2 health check as `READ_IDLE,TIMEOUT` (e.g. `30s,15s`); off by default.
    #[arg(long, value_parser = tuning::parse_h2_ping)]
    h2_ping: Option<(Duration, Duration)>,
    /// Keepalive set right after connect as Go's dialer does: idle and interval in seconds,
    /// count 9. 30 is kubelet's and client-go's; 0: none.
    #[arg(long, default_value_t = 30)]
    go_keepalive: u64,
    /// Set `TCP_USER_TIMEOUT` on each connection (the application's own defence).
    #[arg(long, value_parser = parse_duration)]
    user_timeout: Option<Duration>,
    /// Try the resolved addresses in a random order on each dial (a round-robin DNS answer, so
    /// that a fleet spreads over the addresses) instead of sorted.
    #[arg(long)]
    shuffle: bool,
    /// Close the connection only after this many heartbeats in a row failed (kubelet's own
    /// remedy closes all connections on the second failed try); earlier failures retry at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10))]
    close_after: u32,
    /// Exit by itself after this long (every fixture is bounded in time).
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    lifetime: Duration,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    if args.watch_only && args.watch_every == 0 {
        eprintln!("kube-client: --watch-only needs --watch-every > 0");
        std::process::exit(2);
    }
    tokio::select! {
        () = run(&args) => {}
        () = tokio::time::sleep(args.lifetime) => {
            emit(&Report::new("done").note("lifetime over"));
        }
    }
}

/// Dial, serve until the connection fails, report, re-resolve and re-dial: forever (the
/// lifetime bound in `main` ends it).
async fn run(args: &Args) {
    let mut seq = calls::Seq::default();
    let mut first = true;
    loop {
        let conn = dial::dial_until_connected(args).await;
        if !first {
            emit(
                &Report::new("redialed")
                    .port(conn.port)
                    .text("peer", &conn.peer.to_string()),
            );
        }
        first = false;
        let failure = calls::session(args, conn, &mut seq).await;
        emit(&failure);
    }
}
