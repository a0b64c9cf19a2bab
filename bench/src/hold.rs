//! The bench's socket helpers, run as `lab-bench <helper>` inside the lab's namespaces:
//! `sink` accepts and keeps (or at once drops) connections, `hold` opens many connections and
//! keeps them, `churn` opens and closes connections at a fixed rate. Each prints one JSON
//! line when its work is done and every one ends by itself (`--lifetime`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Subcommand;

#[derive(Subcommand)]
pub enum Helper {
    /// Accept on every `--hold` address and keep the sockets; accept on `--drop` and close.
    Sink {
        #[arg(long, value_delimiter = ',')]
        hold: Vec<SocketAddr>,
        #[arg(long, value_delimiter = ',')]
        drop: Vec<SocketAddr>,
        #[arg(long, default_value_t = 1800)]
        lifetime: u64,
    },
    /// Open `--count` connections, spread over `--peers`, and keep them.
    Hold {
        #[arg(long, value_delimiter = ',')]
        peers: Vec<SocketAddr>,
        #[arg(long)]
        count: usize,
        #[arg(long, default_value_t = 1800)]
        lifetime: u64,
    },
    /// Connect and close `--rate` times a second for `--seconds`.
    Churn {
        #[arg(long)]
        peer: SocketAddr,
        #[arg(long)]
        rate: u32,
        #[arg(long)]
        seconds: u64,
    },
}

pub(crate) fn run(h: Helper) -> ExitCode {
    raise_fd_limit();
    let res = match h {
        Helper::Sink {
            hold,
            drop,
            lifetime,
        } => sink(&hold, &drop, lifetime),
        Helper::Hold {
            peers,
            count,
            lifetime,
        } => hold(&peers, count, lifetime),
        Helper::Churn {
            peer,
            rate,
            seconds,
        } => churn(peer, rate, seconds),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("{{\"event\":\"error\",\"error\":{:?}}}", e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// The soft descriptor limit up to the hard one (the bench keeps each process under it).
fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid rlimit structs; on failure the old limit stays and connects report it.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &raw const lim);
        }
    }
}

fn sink(hold: &[SocketAddr], drop: &[SocketAddr], lifetime: u64) -> std::io::Result<()> {
    let mut listeners = Vec::new();
    for (addr, keep) in hold
        .iter()
        .map(|a| (a, true))
        .chain(drop.iter().map(|a| (a, false)))
    {
        listeners.push((listen(*addr)?, keep));
    }
    println!("{{\"event\":\"listening\"}}");
    for (l, keep) in listeners {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            // Never stop accepting: a listener that gives up on one error (a connection reset
            // before accept) would let its queue fill, and every later connect time out.
            for s in l.incoming() {
                match s {
                    Ok(s) if keep => kept.push(s),
                    Ok(_) => {}
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
    }
    std::thread::sleep(Duration::from_secs(lifetime));
    Ok(())
}

/// A connect that gives a handshake 15 s (the SYN and its retransmissions at 1, 3 and 7 s)
/// and tries again, up to `CONNECT_TRIES` times. With 100,000 watched connections already
/// open, lifeline's keepalive (a probe a second each after 1 s idle) puts about 200,000
/// packets a second on the lab's veth pair, more than a CPU's backlog
/// (`net.core.netdev_max_backlog`, global, so the bench leaves it) takes at once: a plain
/// connect whose SYN was dropped six times in a row failed with `ETIMEDOUT` after about
/// 127 s (`tcp_syn_retries` 6) and ended a whole scale point before its connections were
/// open. A fresh try is what a client does.
fn connect_patiently(peer: SocketAddr) -> std::io::Result<TcpStream> {
    const CONNECT_TRIES: u32 = 5;
    const HANDSHAKE: Duration = Duration::from_secs(15);
    let mut tries = 1;
    loop {
        match TcpStream::connect_timeout(&peer, HANDSHAKE) {
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut && tries < CONNECT_TRIES => {
                tries += 1;
            }
            done => return done,
        }
    }
}

/// A listener with a deep accept queue: holders and churn connect faster than one accept
/// thread may take them, in bursts.
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    Ok(s.into())
}

fn hold(peers: &[SocketAddr], count: usize, lifetime: u64) -> std::io::Result<()> {
    let mut kept = Vec::with_capacity(count);
    for i in 0..count {
        kept.push(connect_patiently(peers[i % peers.len()])?);
    }
    println!("{{\"event\":\"held\",\"count\":{}}}", kept.len());
    std::thread::sleep(Duration::from_secs(lifetime));
    Ok(())
}

fn churn(peer: SocketAddr, rate: u32, seconds: u64) -> std::io::Result<()> {
    let start = Instant::now();
    let total = u64::from(rate) * seconds;
    let mut done = 0u64;
    // Paced in 10 ms steps: a burst of rate/100 connects, then sleep to the next step.
    while done < total {
        let step = start.elapsed().as_millis() / 10 + 1;
        let due = (u64::try_from(step).unwrap_or(u64::MAX) * u64::from(rate) / 100).min(total);
        while done < due {
            drop(TcpStream::connect(peer)?);
            done += 1;
        }
        let next = Duration::from_millis(u64::try_from(step * 10).unwrap_or(u64::MAX));
        std::thread::sleep(next.saturating_sub(start.elapsed()));
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{{\"event\":\"churned\",\"count\":{done},\"seconds\":{secs:.2}}}");
    Ok(())
}
