//! lab-ttl-spender: a local user killing its own connections to the API endpoint as fast as
//! it can, to spend lifeline's kill budgets. Started as root in the agent's network namespace
//! (and the cgroup the test chose), it becomes uid/gid 65534 with no groups, then keeps
//! `--slots` connections to `--peer`, each: connect, `IP_TTL` 1 (every later packet dies at
//! the first router; no privilege needed), one byte written, then wait until lifeline kills
//! it (the read fails with `ECONNABORTED`) or `--stuck-after` passes (its kill was refused:
//! a new connection replaces it), until `--seconds` pass.
//!
//! Prints `uid U pid P`, `ready`, then at the end `done killed K stuck S errors E`.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Parser)]
#[command(about = "an unprivileged user spending kill budgets with IP_TTL 1")]
struct Args {
    #[arg(long)]
    peer: SocketAddr,
    #[arg(long, default_value_t = 12)]
    slots: usize,
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seconds to wait for a connection's kill before replacing it.
    #[arg(long, default_value_t = 8)]
    stuck_after: u64,
}

#[derive(Default)]
struct Counts {
    killed: AtomicU64,
    stuck: AtomicU64,
    errors: AtomicU64,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = lifeline_tests::infra::nobody::become_nobody() {
        eprintln!("lab-ttl-spender: {e}");
        std::process::exit(2);
    }
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let counts = Counts::default();
    std::thread::scope(|s| {
        for _ in 0..args.slots {
            s.spawn(|| slot(&args, deadline, &counts));
        }
        println!("ready");
    });
    println!(
        "done killed {} stuck {} errors {}",
        counts.killed.load(Ordering::Relaxed),
        counts.stuck.load(Ordering::Relaxed),
        counts.errors.load(Ordering::Relaxed)
    );
}

/// One connection after another until the deadline.
fn slot(args: &Args, deadline: Instant, counts: &Counts) {
    while Instant::now() < deadline {
        let counter = match one(args, deadline) {
            Ok(true) => &counts.killed,
            Ok(false) => &counts.stuck,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(200));
                &counts.errors
            }
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// One connection made to die: whether lifeline killed it (else it was replaced).
fn one(args: &Args, deadline: Instant) -> std::io::Result<bool> {
    let mut c = TcpStream::connect_timeout(&args.peer, Duration::from_secs(5))?;
    c.set_ttl(1)?;
    c.write_all(b"x")?;
    let left = deadline.saturating_duration_since(Instant::now());
    let wait = Duration::from_secs(args.stuck_after)
        .min(left)
        .max(Duration::from_millis(100));
    c.set_read_timeout(Some(wait))?;
    let mut buf = [0_u8; 64];
    match c.read(&mut buf) {
        Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
        // The server answered or closed: the TTL did not stop it (no router on the path).
        Ok(_) => Err(std::io::Error::other("answered: no router on the path")),
    }
}
