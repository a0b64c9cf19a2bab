//! lab-tc's neighbour: tests/bpf/neighbour.c built with clang, loaded and attached with aya,
//! its counts printed until it is killed.

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

use crate::{Chain, Verdict};

const SOURCE: &str = include_str!("../../../bpf/neighbour.c");

/// Build, load and attach the neighbour to `dev`, then report its counts.
pub(crate) fn run(
    dev: &str,
    chain: Chain,
    verdict: Verdict,
    drop_port: u16,
    first: bool,
    (priority, handle): (u16, u32),
) -> Result<()> {
    let dir = lifeline_tests::infra::util::TempDir::new()?;
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
            match tc::qdisc_add_clsact(dev) {
                Ok(()) | Err(tc::TcError::AlreadyAttached) => {}
                // aya 0.14 reports an existing qdisc as EEXIST.
                Err(tc::TcError::NetlinkError(e)) if e.raw_os_error() == Some(libc::EEXIST) => {}
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
        .attach_with_options(dev, TcAttachType::Egress, options)
        .with_context(|| format!("attaching to {dev}"))?;
    println!("{}", serde_json::json!({ "event": "attached" }));
    report(&ebpf)
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
