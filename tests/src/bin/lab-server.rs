//! lab-server: the lab's stand-in for an API server.
//!
//! The first line a client sends chooses the mode of its connection:
//! - `bulk`: sink, read and discard everything (the client uploads at full speed);
//! - `source`: write as fast as possible until the client goes away;
//! - `events N`: send `event K` every N seconds, like a watch / long-poll stream;
//! - anything else: echo that line and every later line back (heartbeat replies).
//!
//! Prints JSON lines on stdout: `listening` once, `accepted` per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use clap::Parser;
use lifeline_tests::{mono_ms, parse_duration};

#[derive(Parser)]
#[command(about = "TCP server for the lifeline lab")]
struct Args {
    /// Address to listen on; `[::]` is dual stack (IPv4 too, bindv6only is 0).
    #[arg(long, default_value = "[::]:6443")]
    listen: SocketAddr,
    /// Exit by itself after this long, so a forgotten server cannot run forever.
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    lifetime: Duration,
}

fn main() {
    let args = Args::parse();
    let listener = TcpListener::bind(args.listen).unwrap_or_else(|e| {
        eprintln!("lab-server: cannot listen on {}: {e}", args.listen);
        std::process::exit(1);
    });
    let deadline = Instant::now() + args.lifetime;
    // The lifetime bound: a watchdog thread ends the process.
    std::thread::spawn(move || {
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        std::process::exit(0);
    });
    say(&format!(r#""event":"listening","addr":"{}""#, args.listen));
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
                let peer = stream
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                say(&format!(r#""event":"accepted","peer":"{peer}""#));
                std::thread::spawn(move || serve(stream));
            }
            Err(e) => eprintln!("lab-server: accept: {e}"),
        }
    }
}

fn say(fields: &str) {
    println!(r#"{{"mono_ms":{},{fields}}}"#, mono_ms());
}

/// Serves one connection until the peer goes away or an error happens.
fn serve(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return;
    }
    let words: Vec<&str> = first.split_whitespace().collect();
    match words.as_slice() {
        ["bulk"] => {
            let mut buf = vec![0u8; 256 * 1024];
            while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
        }
        ["source"] => {
            let buf = vec![b'x'; 256 * 1024];
            while writer.write_all(&buf).is_ok() {}
        }
        ["events", secs] => {
            // The first at once, then on whole multiples of N seconds of CLOCK_MONOTONIC:
            // every stream shares one phase, so a test can start a fault at a known moment
            // of it (`lifeline_tests::sleep_to_boundary`).
            let every = Duration::from_secs(secs.parse().unwrap_or(1).max(1));
            for k in 0u64.. {
                if writer.write_all(format!("event {k}\n").as_bytes()).is_err() {
                    break;
                }
                lifeline_tests::sleep_to_boundary(every);
            }
        }
        _ => {
            let mut line = first;
            loop {
                if writer.write_all(line.as_bytes()).is_err() {
                    break;
                }
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
            }
        }
    }
}
