//! lab-crowd: a hostile neighbour for the servers' test. Started in a network namespace, it
//! opens N connections to a TCP address or a Unix socket path and holds them idle (it never
//! sends or reads a byte) until it is killed or 10 minutes pass. With `--nobody` it first
//! becomes uid/gid 65534 with no groups, as the lock's squatter does (lab-squatter).
//!
//! Usage: `lab-crowd [--nobody] tcp|unix ADDR N` (N at most 5,000). Each connect may take
//! 2 s, all of them 60 s. Prints `uid U pid P`, then `connected K`, `took MS ms`, one
//! `failed M: ERROR` per kind of error, then `ready`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

use socket2::{Domain, SockAddr, Socket, Type};

const MAX: usize = 5_000;
const EACH: Duration = Duration::from_secs(2);
const ALL: Duration = Duration::from_mins(1);

fn main() {
    if let Err(e) = run() {
        eprintln!("lab-crowd: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let nobody = args.first().is_some_and(|a| a == "--nobody");
    if nobody {
        args.remove(0);
    }
    let [kind, addr, n] = args.as_slice() else {
        return Err("usage: lab-crowd [--nobody] tcp|unix ADDR N".into());
    };
    let n: usize = n.parse().map_err(|e| format!("N {n:?}: {e}"))?;
    if n > MAX {
        return Err(format!("N {n} is more than {MAX}"));
    }
    let (domain, to) = match kind.as_str() {
        "tcp" => {
            let sa: std::net::SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
            (Domain::for_address(sa), SockAddr::from(sa))
        }
        "unix" => (
            Domain::UNIX,
            SockAddr::unix(addr).map_err(|e| format!("{addr}: {e}"))?,
        ),
        other => return Err(format!("{other:?} is neither tcp nor unix")),
    };
    // Room for every connection, set while still root (the hard limit may need raising).
    let want = libc::rlim_t::try_from(n + 64).unwrap_or(libc::rlim_t::MAX);
    let lim = libc::rlimit {
        rlim_cur: want,
        rlim_max: want,
    };
    // SAFETY: plain syscalls on values of our own; each result is checked.
    unsafe {
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raw const lim) != 0 {
            return Err(format!(
                "RLIMIT_NOFILE {want}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    if nobody {
        lifeline_tests::infra::nobody::become_nobody()?;
    } else {
        println!(
            "uid {} pid {}",
            // SAFETY: getuid(2) cannot fail.
            unsafe { libc::getuid() },
            std::process::id()
        );
    }
    let t0 = Instant::now();
    let mut held = Vec::with_capacity(n);
    let mut failed: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..n {
        if t0.elapsed() > ALL {
            *failed.entry("out of time".into()).or_default() += 1;
            break;
        }
        let r = Socket::new(domain, Type::STREAM, None).and_then(|s| {
            if domain == Domain::UNIX {
                // A Unix connect waits for room in the listen queue as long as SO_SNDTIMEO
                // allows (unix_stream_connect in net/unix/af_unix.c).
                s.set_write_timeout(Some(EACH))?;
                s.connect(&to)?;
            } else {
                s.connect_timeout(&to, EACH)?;
            }
            Ok(s)
        });
        match r {
            Ok(s) => held.push(s),
            Err(e) => *failed.entry(e.to_string()).or_default() += 1,
        }
    }
    println!("connected {}", held.len());
    println!("took {} ms", t0.elapsed().as_millis());
    for (e, count) in &failed {
        println!("failed {count}: {e}");
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    // Holds until killed (the test's drop); bounded, so a forgotten crowd ends by itself.
    std::thread::sleep(Duration::from_mins(10));
    drop(held);
    Ok(())
}
