//! kube-server: the lab's stand-in for a Kubernetes API server, HTTP/2 cleartext (h2c with
//! prior knowledge, as a client through a TCP load balancer speaks it).
//!
//! - `GET /healthz`: `ok` at once (the kubelet's heartbeat / lease update);
//! - `GET /watch?every=N`: a stream that never ends, `event K\n` every N seconds (a watch).
//!
//! Prints JSON lines on stdout: `listening` once, `accepted` per connection, `request` {path,
//! peer} per request.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use clap::Parser;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::{Request, Response, server::conn::http2, service::service_fn};
use hyper_util::rt::{TokioExecutor, TokioIo};
use lifeline_tests::{mono_ms, parse_duration};

#[derive(Parser)]
#[command(about = "HTTP/2 API-server stand-in for the lifeline lab")]
struct Args {
    /// Address to listen on; `[::]` is dual stack (IPv4 too, bindv6only is 0).
    #[arg(long, default_value = "[::]:6443")]
    listen: SocketAddr,
    /// Exit by itself after this long, so a forgotten server cannot run forever.
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    lifetime: Duration,
}

type BoxBody = UnsyncBoxBody<Bytes, Infallible>;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .unwrap_or_else(|e| {
            eprintln!("kube-server: cannot listen on {}: {e}", args.listen);
            std::process::exit(1);
        });
    say(&format!(r#""event":"listening","addr":"{}""#, args.listen));
    let serve = async {
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    say(&format!(r#""event":"accepted","peer":"{peer}""#));
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(async move {
                        let conn = http2::Builder::new(TokioExecutor::new()).serve_connection(
                            TokioIo::new(stream),
                            service_fn(move |req: Request<Incoming>| {
                                std::future::ready(Ok::<_, Infallible>(handle(&req, peer)))
                            }),
                        );
                        if let Err(e) = conn.await {
                            eprintln!("kube-server: connection from {peer}: {e}");
                        }
                    });
                }
                Err(e) => eprintln!("kube-server: accept: {e}"),
            }
        }
    };
    // The lifetime bound: whichever ends first.
    tokio::select! {
        () = serve => {}
        () = tokio::time::sleep(args.lifetime) => {}
    }
}

fn say(fields: &str) {
    println!(r#"{{"mono_ms":{},{fields}}}"#, mono_ms());
}

fn handle(req: &Request<Incoming>, peer: SocketAddr) -> Response<BoxBody> {
    // One line per request, so a fleet bench counts heartbeats and re-lists per node (peer).
    say(&format!(
        r#""event":"request","path":"{}","peer":"{peer}""#,
        req.uri().path()
    ));
    let every = req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("every="))
            .and_then(|n| n.parse::<u64>().ok())
    });
    let body = match req.uri().path() {
        "/healthz" => Full::new(Bytes::from_static(b"ok\n")).boxed_unsync(),
        "/watch" => Ticker::new(Duration::from_secs(every.unwrap_or(1).max(1))).boxed_unsync(),
        _ => {
            let mut r = Response::new(Full::new(Bytes::from_static(b"not found\n")).boxed_unsync());
            *r.status_mut() = hyper::StatusCode::NOT_FOUND;
            return r;
        }
    };
    Response::new(body)
}

/// A body that never ends: `event K\n` at once, then every `every`.
struct Ticker {
    tick: tokio::time::Interval,
    seq: u64,
}

impl Ticker {
    fn new(every: Duration) -> Self {
        Self {
            tick: tokio::time::interval(every),
            seq: 0,
        }
    }
}

impl Body for Ticker {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.tick.poll_tick(cx).is_pending() {
            return Poll::Pending;
        }
        self.seq += 1;
        let line = format!("event {}\n", self.seq);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(line)))))
    }
}
