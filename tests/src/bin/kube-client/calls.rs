//! One HTTP/2 session on a dialed connection: the heartbeat and the watch side by side
//! until the first failure, which is returned as the `error` event to print.

use std::error::Error as StdError;
use std::time::Instant;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http2::SendRequest;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;

use crate::Args;
use crate::dial::Dialed;
use crate::report::{Report, emit};

type Sender = SendRequest<Empty<Bytes>>;

/// Sequence numbers that go on across connections, so a test sees one series of heartbeats.
#[derive(Default)]
pub(crate) struct Seq {
    heartbeat: u64,
    watch: u64,
}

/// Runs the session until something fails; returns the failure.
pub(crate) async fn session(args: &Args, conn: Dialed, seq: &mut Seq) -> Report {
    let port = conn.port;
    let (sender, connection) =
        match crate::tuning::handshake(args.h2_ping, TokioIo::new(conn.stream)).await {
            Ok(pair) => pair,
            Err(e) => return failure("handshake", &e, port),
        };
    let base = format!("http://{}:{}", args.server, args.port);
    let heartbeat = async {
        if args.watch_only {
            std::future::pending::<()>().await;
        }
        heartbeats(args, sender.clone(), &base, port, &mut seq.heartbeat).await
    };
    let watch = async {
        if args.watch_every == 0 {
            std::future::pending::<()>().await;
        }
        watch(args, sender.clone(), &base, port, &mut seq.watch).await
    };
    // biased, connection first: when the socket fails, the connection's own I/O error (with
    // the errno, e.g. ECONNABORTED from SOCK_DESTROY) is what gets reported, not the
    // requests' secondary "connection closed".
    tokio::select! {
        biased;
        r = connection => match r {
            Ok(()) => Report::new("eof").port(port).note("server closed the connection"),
            Err(e) => failure("read", &e, port),
        },
        r = heartbeat => r,
        r = watch => r,
    }
}

async fn heartbeats(args: &Args, mut tx: Sender, base: &str, port: u16, seq: &mut u64) -> Report {
    let uri: Uri = match format!("{base}/healthz").parse() {
        Ok(u) => u,
        Err(e) => return Report::new("error").text("error", &e.to_string()),
    };
    let mut failed = 0;
    loop {
        *seq += 1;
        let t0 = Instant::now();
        let call = async {
            tx.ready().await?;
            let resp = tx.send_request(get(&uri)).await?;
            resp.into_body().collect().await.map(|_| ())
        };
        match tokio::time::timeout(args.request_timeout, call).await {
            Ok(Ok(())) => {
                let rtt = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
                emit(
                    &Report::new("ok")
                        .port(port)
                        .num("seq", *seq)
                        .num("rtt_ms", rtt),
                );
            }
            Ok(Err(e)) => return failure("heartbeat", &e, port),
            Err(_) => {
                let timed_out = Report::new("error")
                    .port(port)
                    .text("op", "heartbeat")
                    .text("error", "request timed out");
                failed += 1;
                if failed >= args.close_after {
                    return timed_out;
                }
                // Not yet the failure that closes the connection: report it and retry at
                // once on the same connection, as kubelet's status update loop does.
                emit(&timed_out.note("retrying on the same connection"));
                continue;
            }
        }
        failed = 0;
        tokio::time::sleep(args.heartbeat).await;
    }
}

async fn watch(args: &Args, mut tx: Sender, base: &str, port: u16, seq: &mut u64) -> Report {
    let uri: Uri = match format!("{base}/watch?every={}", args.watch_every).parse() {
        Ok(u) => u,
        Err(e) => return Report::new("error").text("error", &e.to_string()),
    };
    let resp = match async {
        tx.ready().await?;
        tx.send_request(get(&uri)).await
    }
    .await
    {
        Ok(r) => r,
        Err(e) => return failure("watch", &e, port),
    };
    let mut body = resp.into_body();
    loop {
        match body.frame().await {
            Some(Ok(f)) if f.is_data() => {
                *seq += 1;
                emit(&Report::new("watch-event").port(port).num("seq", *seq));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return failure("watch", &e, port),
            None => return Report::new("eof").port(port).note("the watch stream ended"),
        }
    }
}

fn get(uri: &Uri) -> Request<Empty<Bytes>> {
    let mut req = Request::new(Empty::new());
    *req.uri_mut() = uri.clone();
    req
}

/// An `error` event for a hyper failure: with the errno of the I/O error behind it, if any.
fn failure(op: &str, e: &hyper::Error, port: u16) -> Report {
    let mut cause: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            // h2 keeps only the io::ErrorKind of a connection's I/O error (its errors are
            // Clone), so the errno comes back from the kind; SOCK_DESTROY's ECONNABORTED
            // survives as ConnectionAborted.
            let errno = io.raw_os_error().or_else(|| errno_of(io.kind()));
            let io = errno.map_or_else(
                || std::io::Error::new(io.kind(), io.to_string()),
                std::io::Error::from_raw_os_error,
            );
            return Report::io(op, &io, port).text("detail", &e.to_string());
        }
        cause = c.source();
    }
    Report::new("error")
        .port(port)
        .text("op", op)
        .text("error", &e.to_string())
}

fn errno_of(kind: std::io::ErrorKind) -> Option<i32> {
    use std::io::ErrorKind as K;
    Some(match kind {
        K::ConnectionAborted => libc::ECONNABORTED,
        K::ConnectionReset => libc::ECONNRESET,
        K::ConnectionRefused => libc::ECONNREFUSED,
        K::BrokenPipe => libc::EPIPE,
        K::TimedOut => libc::ETIMEDOUT,
        K::HostUnreachable => libc::EHOSTUNREACH,
        K::NetworkUnreachable => libc::ENETUNREACH,
        _ => return None,
    })
}
