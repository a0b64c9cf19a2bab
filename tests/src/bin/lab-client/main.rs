//! lab-client: a long-lived TCP client like kubelet's connection to the API server.
//!
//! Prints one JSON line per event on stdout:
//! `{"t_ms":..,"mono_ms":..,"event":"connected"|"ok"|"error"|"eof"|"redialed"|"done",
//!   "peer":"198.51.100.2:6443" (connected),
//!   "local_port":..,"errno":103,"error":"ECONNABORTED: ...","op":"read"}`
//! `t_ms` counts from the client's start, `mono_ms` is `CLOCK_MONOTONIC` (the clock the tests
//! and the demo use), so outages can be measured across processes.
//!
//! Blocking `std::net` with very long I/O timeouts (600 s by default): without lifeline a read
//! on a black-holed connection must visibly hang, as it does for the real client.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use lifeline_tests::parse_duration;

mod conn;
mod report;
use conn::{AppKeepalive, Conn, connect, read_line};
use report::{Report, emit};

#[derive(Parser)]
#[command(about = "TCP client for the lifeline lab")]
struct Args {
    /// The server, e.g. `198.51.100.2:6443` or `[2001:db8::2]:6443`.
    #[arg(long, default_value = "198.51.100.2:6443")]
    peer: SocketAddr,
    /// Read/write timeout; long so it never masks the kernel's behaviour.
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    io_timeout: Duration,
    /// Set keepalive on the socket before connecting, as IDLE,INTERVAL,COUNT in seconds
    /// (e.g. `5,2,2`): the application's own choice, which lifeline must not loosen.
    #[arg(long, value_parser = parse_keepalive)]
    keepalive: Option<AppKeepalive>,
    /// Set --keepalive after `connect()` returns instead, one option at a time, as Go's
    /// net.Dialer does (kubelet: 30,30,9); COUNT 0 leaves the count alone (Go before 1.23).
    #[arg(long, requires = "keepalive")]
    keepalive_after_connect: bool,
    /// Print the socket's keepalive options (`sockopts` events) this often.
    #[arg(long, value_parser = parse_duration)]
    sockopts_every: Option<Duration>,
    /// Also open an idle connection to this peer and hold it (repeatable): one process with
    /// connections to several peers, as a node daemon has.
    #[arg(long = "hold")]
    holds: Vec<SocketAddr>,
    /// Exit by itself after this long (every fixture is bounded in time).
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    lifetime: Duration,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Send a small request line and read the reply, every --interval, on one connection.
    Heartbeat {
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        interval: Duration,
        /// On an error, reconnect and carry on (a real client's re-dial).
        #[arg(long)]
        redial: bool,
        /// Send each request when `CLOCK_MONOTONIC` crosses a whole multiple of the
        /// interval, so every such client shares one phase (a test then starts a fault at
        /// a known moment of their cycle).
        #[arg(long)]
        aligned: bool,
    },
    /// Upload as fast as possible for --seconds, then hold the connection open.
    Bulk {
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Connect and hold the connection without traffic.
    Idle,
    /// Ask for an event line every --every seconds and read them (a watch stream).
    Watch {
        #[arg(long, default_value_t = 1)]
        every: u64,
        /// On an error, reconnect and ask for the stream again (a real client's re-dial).
        #[arg(long)]
        redial: bool,
    },
}

fn main() {
    let mut args = Args::parse();
    if let Some(k) = args.keepalive.as_mut() {
        k.after_connect = args.keepalive_after_connect;
    }
    let lifetime = args.lifetime;
    std::thread::spawn(move || {
        std::thread::sleep(lifetime);
        emit(&Report::new("done").note("lifetime over"));
        std::process::exit(0);
    });
    let mut conn = connect(&args.peer, args.io_timeout, args.keepalive).unwrap_or_else(|r| {
        emit(&r);
        std::process::exit(1);
    });
    let peer = args.peer.to_string();
    emit(&Report::new("connected").port(conn.port).text("peer", &peer));
    if let Some(every) = args.sockopts_every {
        report_sockopts(&conn, every);
    }
    // Kept open until the process exits; the kernel's view is all the tests look at.
    let _held: Vec<Conn> = args
        .holds
        .iter()
        .map(|peer| {
            let c = connect(peer, args.io_timeout, args.keepalive).unwrap_or_else(|r| {
                emit(&r);
                std::process::exit(1);
            });
            emit(
                &Report::new("connected")
                    .port(c.port)
                    .text("peer", &peer.to_string()),
            );
            c
        })
        .collect();
    let failure = match args.mode {
        Mode::Heartbeat {
            interval,
            redial,
            aligned,
        } => heartbeat(&args, &mut conn, interval, redial, aligned),
        Mode::Bulk { seconds } => bulk(&mut conn, Duration::from_secs(seconds))
            .err()
            .or_else(|| hold(&mut conn)),
        Mode::Idle => hold(&mut conn),
        Mode::Watch { every, redial } => watch_loop(&args, &mut conn, every, redial),
    };
    if let Some(r) = failure {
        emit(&r);
        std::process::exit(1);
    }
}

fn heartbeat(
    args: &Args,
    conn: &mut Conn,
    interval: Duration,
    redial: bool,
    aligned: bool,
) -> Option<Report> {
    let mut line = String::new();
    for seq in 1u64.. {
        if aligned {
            lifeline_tests::sleep_to_boundary(interval);
        }
        let t0 = Instant::now();
        // One write per request: write! would split it into several tiny segments.
        let res = conn
            .writer
            .write_all(format!("ping {seq}\n").as_bytes())
            .map_err(|e| Report::io("write", &e, conn.port))
            .and_then(|()| read_line(conn, &mut line));
        match res {
            Ok(()) => emit(
                &Report::new("ok")
                    .port(conn.port)
                    .num("seq", seq)
                    .num("rtt_ms", ms(t0.elapsed())),
            ),
            Err(r) if redial => {
                emit(&r);
                *conn = redial_loop(args);
                emit(&Report::new("redialed").port(conn.port));
                continue;
            }
            Err(r) => return Some(r),
        }
        if !aligned {
            std::thread::sleep(interval);
        }
    }
    None
}

/// Re-dials until it works; bounded by the process lifetime watchdog.
fn redial_loop(args: &Args) -> Conn {
    loop {
        match connect(&args.peer, args.io_timeout, args.keepalive) {
            Ok(c) => return c,
            Err(r) => emit(&r),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn bulk(conn: &mut Conn, seconds: Duration) -> Result<(), Report> {
    conn.writer
        .write_all(b"bulk\n")
        .map_err(|e| Report::io("write", &e, conn.port))?;
    let buf = vec![b'x'; 64 * 1024];
    let (start, mut last, mut bytes) = (Instant::now(), Instant::now(), 0u64);
    while start.elapsed() < seconds {
        conn.writer
            .write_all(&buf)
            .map_err(|e| Report::io("write", &e, conn.port))?;
        bytes += buf.len() as u64;
        if last.elapsed() >= Duration::from_secs(1) {
            emit(&Report::new("ok").port(conn.port).num("bytes", bytes));
            last = Instant::now();
        }
    }
    emit(
        &Report::new("ok")
            .port(conn.port)
            .num("bytes", bytes)
            .note("bulk done, holding"),
    );
    Ok(())
}

/// Holds the connection: reads until the peer closes or an error (the server never writes).
fn hold(conn: &mut Conn) -> Option<Report> {
    let mut buf = [0u8; 4096];
    loop {
        match conn.reader.read(&mut buf) {
            Ok(0) => {
                return Some(
                    Report::new("eof")
                        .port(conn.port)
                        .note("peer closed the connection"),
                );
            }
            Ok(_) => {}
            Err(e) => return Some(Report::io("read", &e, conn.port)),
        }
    }
}

fn watch(conn: &mut Conn, every: u64) -> Option<Report> {
    if let Err(e) = conn
        .writer
        .write_all(format!("events {every}\n").as_bytes())
    {
        return Some(Report::io("write", &e, conn.port));
    }
    let mut line = String::new();
    for seq in 1u64.. {
        if let Err(r) = read_line(conn, &mut line) {
            return Some(r);
        }
        emit(&Report::new("ok").port(conn.port).num("seq", seq));
    }
    None
}

/// Watches; with `redial`, re-dials after an error and watches again on the new connection.
fn watch_loop(args: &Args, conn: &mut Conn, every: u64, redial: bool) -> Option<Report> {
    loop {
        let failure = watch(conn, every)?;
        if !redial {
            return Some(failure);
        }
        emit(&failure);
        *conn = redial_loop(args);
        emit(&Report::new("redialed").port(conn.port));
    }
}

/// A thread printing the first connection's keepalive options every `every`, for the
/// process lifetime (the lifetime watchdog ends it).
fn report_sockopts(conn: &Conn, every: Duration) {
    let Ok(s) = conn.writer.try_clone() else {
        return;
    };
    let port = conn.port;
    std::thread::spawn(move || {
        loop {
            emit(&conn::sockopts(&s, port));
            std::thread::sleep(every);
        }
    });
}

fn parse_keepalive(s: &str) -> Result<AppKeepalive, String> {
    let v: Vec<u64> = s
        .split(',')
        .map(|x| x.trim().parse().map_err(|e| format!("'{x}': {e}")))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [idle, intvl, cnt] => Ok(AppKeepalive {
            idle,
            intvl,
            cnt: u32::try_from(cnt).map_err(|e| e.to_string())?,
            after_connect: false,
        }),
        _ => Err(format!("'{s}': expected IDLE,INTERVAL,COUNT in seconds")),
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
