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

use std::{io::Write as _, path::Path, process::Command, time::Duration};

use anyhow::{Context as _, Result, bail};
use aya::{
    Ebpf,
    maps::Array,
    programs::{
        LinkOrder, SchedClassifier, TcAttachType,
        tc::{self, NlOptions, TcAttachOptions, TcHandle},
    },
};
use clap::{Parser, Subcommand, ValueEnum};

const SOURCE: &str = include_str!("../../bpf/neighbour.c");

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
        } => {
            let dir = lifeline_tests::util::TempDir::new()?;
            let obj = build(dir.path())?;
            let mut ebpf = Ebpf::load_file(&obj).context("loading the neighbour")?;
            let mut config: Array<_, i32> =
                Array::try_from(ebpf.map_mut("NEIGHBOUR_CONFIG").context("no config map")?)?;
            config.set(0, i32::from(drop_port), 0)?;
            config.set(
                1,
                match verdict {
                    Verdict::Ok => 0,
                    Verdict::Next => -1,
                },
                0,
            )?;
            let prog: &mut SchedClassifier = ebpf
                .program_mut("lab_neighbour")
                .context("no program")?
                .try_into()?;
            prog.load()?;
            let options = match chain {
                Chain::Tcx => TcAttachOptions::TcxOrder(if first {
                    LinkOrder::first()
                } else {
                    LinkOrder::last()
                }),
                Chain::Clsact => {
                    match tc::qdisc_add_clsact(&dev) {
                        Ok(()) | Err(tc::TcError::AlreadyAttached) => {}
                        // aya 0.14 reports an existing qdisc as EEXIST.
                        Err(tc::TcError::NetlinkError(e))
                            if e.raw_os_error() == Some(libc::EEXIST) => {}
                        Err(e) => bail!("adding clsact to {dev}: {e}"),
                    }
                    TcAttachOptions::Netlink(NlOptions {
                        priority,
                        handle: TcHandle::from(handle),
                        classid: None,
                    })
                }
            };
            let _link = prog
                .attach_with_options(&dev, TcAttachType::Egress, options)
                .with_context(|| format!("attaching to {dev}"))?;
            println!("{}", serde_json::json!({ "event": "attached" }));
            report(&ebpf)
        }
    }
}

/// The neighbour's object, built from its source in `dir`.
fn build(dir: &Path) -> Result<std::path::PathBuf> {
    let src = dir.join("neighbour.c");
    let obj = dir.join("neighbour.o");
    std::fs::write(&src, SOURCE)?;
    let arch = format!("/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    let out = Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-I", &arch, "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .output()
        .context(
            "running clang (Debian's clang and libbpf-dev: `cargo xtask test` installs them)",
        )?;
    if !out.status.success() {
        bail!("clang: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(obj)
}

/// Its counts every 100 ms, for at most 10 minutes.
fn report(ebpf: &Ebpf) -> Result<()> {
    let counts: Array<_, u64> =
        Array::try_from(ebpf.map("NEIGHBOUR_COUNTS").context("no counts map")?)?;
    for _ in 0..6_000 {
        let (seen, dropped) = (counts.get(&0, 0)?, counts.get(&1, 0)?);
        println!(
            "{}",
            serde_json::json!({ "event": "counts", "seen": seen, "dropped": dropped })
        );
        std::io::stdout().flush()?;
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}
