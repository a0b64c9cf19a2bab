//! lab-flood: a hostile neighbour for the capacity test. Started as root in the agent's
//! network namespace, it becomes uid/gid 65534 with no groups, opens `--holds` connections
//! to `--hold` (the endpoint's address: sockets watched only for their peer), then until
//! `--seconds` pass or `--max-connects` are made:
//! - `--threads` threads connect to `--refuse` as fast as they can (nothing listens there:
//!   each connect is refused at once and its socket closed), and
//! - one thread sets keepalive on the held connections again and again with Go's values.
//!
//! Prints `uid U pid P`, `held N`, `ready`, then at the end
//! `done refused R errors E setsockopt S ms T`.

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Parser)]
#[command(about = "unprivileged connect and setsockopt flood for the lifeline lab")]
struct Args {
    /// Where the refused connects go (a watched port nobody listens on).
    #[arg(long)]
    refuse: std::net::SocketAddrV4,
    /// The endpoint's address: the held connections go there.
    #[arg(long)]
    hold: SocketAddr,
    #[arg(long, default_value_t = 32)]
    holds: usize,
    #[arg(long, default_value_t = 2)]
    threads: usize,
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    #[arg(long, default_value_t = 5_000_000)]
    max_connects: u64,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = lifeline_tests::infra::nobody::become_nobody() {
        eprintln!("lab-flood: {e}");
        std::process::exit(2);
    }
    let held: Vec<TcpStream> = (0..args.holds)
        .map(|_| TcpStream::connect_timeout(&args.hold, Duration::from_secs(5)))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| {
            eprintln!("lab-flood: cannot connect to {}: {e}", args.hold);
            std::process::exit(1);
        });
    println!("held {}", held.len());
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let (refused, errors, calls) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..args.threads {
            s.spawn(|| connect_loop(&args, deadline, &refused, &errors));
        }
        s.spawn(|| keepalive_loop(&held, deadline, &calls));
        println!("ready");
    });
    println!(
        "done refused {} errors {} setsockopt {} ms {}",
        refused.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
        calls.load(Ordering::Relaxed),
        start.elapsed().as_millis()
    );
}

/// Connects refused at once, one socket each, until the deadline or the shared maximum.
fn connect_loop(args: &Args, deadline: Instant, refused: &AtomicU64, errors: &AtomicU64) {
    let addr = libc::sockaddr_in {
        sin_family: libc::sa_family_t::try_from(libc::AF_INET).unwrap_or_default(),
        sin_port: args.refuse.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(args.refuse.ip().octets()),
        },
        sin_zero: [0; 8],
    };
    let len = libc::socklen_t::try_from(size_of::<libc::sockaddr_in>()).unwrap_or_default();
    // Checked every 256 connects: the clock is dearer than a refused connect.
    'outer: loop {
        for _ in 0..256 {
            if refused.load(Ordering::Relaxed) + errors.load(Ordering::Relaxed) >= args.max_connects
            {
                break 'outer;
            }
            // SAFETY: a fresh socket, connected to a valid address of the right length,
            // then closed.
            let rc = unsafe {
                let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
                if fd < 0 {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let rc = libc::connect(fd, (&raw const addr).cast(), len);
                let errno = std::io::Error::last_os_error().raw_os_error();
                libc::close(fd);
                (rc, errno)
            };
            match rc {
                (-1, Some(libc::ECONNREFUSED)) => refused.fetch_add(1, Ordering::Relaxed),
                _ => errors.fetch_add(1, Ordering::Relaxed),
            };
        }
        if Instant::now() >= deadline {
            break;
        }
    }
}

/// Go's keepalive calls (`SO_KEEPALIVE`, then idle, interval and count of 15 s, 15 s, 9)
/// on every held connection, over and over.
fn keepalive_loop(held: &[TcpStream], deadline: Instant, calls: &AtomicU64) {
    let opts = [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 15),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 15),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 9),
    ];
    let len = libc::socklen_t::try_from(size_of::<libc::c_int>()).unwrap_or_default();
    while Instant::now() < deadline {
        for conn in held {
            for (level, name, value) in opts {
                // SAFETY: a live socket and a c_int of the given length.
                unsafe {
                    libc::setsockopt(
                        conn.as_raw_fd(),
                        level,
                        name,
                        (&raw const value).cast(),
                        len,
                    );
                }
                calls.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
