//! lab-tc: the lab's neighbour in a device's tc egress chain, and a look at that chain. Run
//! inside the namespace of the device (`nsenter --net=...`).
//!
//! `lab-tc neighbour --dev eth0 --chain tcx|clsact --verdict ok|next --drop-port P [--first]
//! [--priority N --handle H]` builds tests/bpf/neighbour.c with `clang -target bpf`, loads
//! it with aya and attaches it to the device's egress: as a tcx link (last, or first with
//! `--first`) or as a clsact filter at the priority and handle given. It prints
//! `{"event":"attached"}`, then every 100 ms `{"event":"counts","seen":N,"dropped":M}`, until
//! killed (or 10 minutes pass). Killed, its tcx link goes with it; a clsact filter stays
//! until the namespace goes (or the test deletes it).
//!
//! `lab-tc tcx --dev eth0` prints `{"tcx":["name", ...]}`: the programs of the device's tcx
//! egress chain in order (`null` on a kernel without tcx).
//!
//! `lab-tc connect --to ADDR --within-ms N` tries one TCP connection and prints
//! `{"result":"connected"|"refused"|"timeout"|"error"}`: whether a neighbour's drop holds.

mod neighbour;

use std::time::Duration;

use anyhow::Result;
use aya::programs::{SchedClassifier, TcAttachType};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum Chain {
    Tcx,
    Clsact,
}

#[derive(Clone, Copy, ValueEnum)]
enum Verdict {
    /// `TC_ACT_OK`/`TCX_PASS`: ends the chain.
    Ok,
    /// `TC_ACT_UNSPEC`/`TCX_NEXT`: the next one sees the packet.
    Next,
}

#[derive(Subcommand)]
enum Cmd {
    Neighbour {
        #[arg(long)]
        dev: String,
        #[arg(long, value_enum)]
        chain: Chain,
        #[arg(long, value_enum)]
        verdict: Verdict,
        #[arg(long)]
        drop_port: u16,
        /// tcx: attach first (default: last).
        #[arg(long)]
        first: bool,
        #[arg(long, default_value_t = 0)]
        priority: u16,
        #[arg(long, default_value_t = 0)]
        handle: u32,
    },
    Tcx {
        #[arg(long)]
        dev: String,
    },
    Connect {
        #[arg(long)]
        to: std::net::SocketAddr,
        #[arg(long)]
        within_ms: u64,
    },
}

fn main() {
    if let Err(e) = run(Args::parse().cmd) {
        eprintln!("lab-tc: {e:#}");
        std::process::exit(1);
    }
}

fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Tcx { dev } => {
            let names = SchedClassifier::query_tcx(&dev, TcAttachType::Egress)
                .ok()
                .map(|(_, p)| {
                    p.iter()
                        .map(|i| i.name_as_str().unwrap_or("?").to_owned())
                        .collect::<Vec<_>>()
                });
            println!("{}", serde_json::json!({ "tcx": names }));
            Ok(())
        }
        Cmd::Connect { to, within_ms } => {
            let within = Duration::from_millis(within_ms);
            let result = match std::net::TcpStream::connect_timeout(&to, within) {
                Ok(_) => "connected",
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => "refused",
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => "timeout",
                Err(_) => "error",
            };
            println!("{}", serde_json::json!({ "result": result }));
            Ok(())
        }
        Cmd::Neighbour {
            dev,
            chain,
            verdict,
            drop_port,
            first,
            priority,
            handle,
        } => neighbour::run(&dev, chain, verdict, drop_port, first, (priority, handle)),
    }
}
