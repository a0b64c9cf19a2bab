//! A neighbour in the client's tc egress chain (`lab-tc neighbour`, tests/bpf/neighbour.c):
//! a CNI's or host firewall's program, which counts every packet and drops TCP to one port,
//! attached as a tcx link or a clsact filter, ending the chain or passing packets on.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::netns::NetNs;
use crate::proc::Proc;
use crate::util::wait_until;

/// The device of the client namespace the agent attaches to.
pub const DEV: &str = "eth0";

/// Where the neighbour goes.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// tcx: first in the chain, or last (as Cilium and Calico attach).
    Tcx { first: bool },
    /// A clsact filter at this priority and handle.
    Clsact { priority: u16, handle: u32 },
}

/// What it returns for the packets it lets through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `TC_ACT_OK`/`TCX_PASS`: ends the chain (Cilium).
    Ok,
    /// `TC_ACT_UNSPEC`/`TCX_NEXT`: passes them on (Calico).
    Next,
}

pub struct Neighbour {
    proc: Proc,
    ns: String,
    pub place: Place,
    pub verdict: Verdict,
    /// The TCP port whose traffic it drops.
    pub port: u16,
}

impl Neighbour {
    /// Attach one in `ns` on `DEV`; returns once it is attached.
    ///
    /// # Errors
    /// When the fixture fails or does not attach within 30 s.
    pub fn attach(ns: &NetNs, place: Place, verdict: Verdict, port: u16) -> Result<Self> {
        let bin = crate::paths::fixture("lab-tc")?;
        let port_s = port.to_string();
        let mut args = vec![
            "neighbour",
            "--dev",
            DEV,
            "--drop-port",
            &port_s,
            "--verdict",
        ];
        args.push(if verdict == Verdict::Ok { "ok" } else { "next" });
        let (prio, handle);
        match place {
            Place::Tcx { first } => {
                args.extend(["--chain", "tcx"]);
                if first {
                    args.push("--first");
                }
            }
            Place::Clsact {
                priority,
                handle: h,
            } => {
                (prio, handle) = (priority.to_string(), h.to_string());
                args.extend([
                    "--chain",
                    "clsact",
                    "--priority",
                    &prio,
                    "--handle",
                    &handle,
                ]);
            }
        }
        let bin = bin.to_string_lossy().into_owned();
        let proc = Proc::spawn("lab-tc", ns.command(&bin, &args))?;
        let mut n = Self {
            proc,
            ns: ns.name().to_owned(),
            place,
            verdict,
            port,
        };
        n.proc
            .wait_stdout("the neighbour attached", Duration::from_secs(30), |l| {
                l.contains(r#""event":"attached""#)
            })?;
        Ok(n)
    }

    fn lines(&self) -> Vec<Value> {
        (self.proc.stdout_lines().iter())
            .filter_map(|l| serde_json::from_str(&l.text).ok())
            .collect()
    }

    /// (packets seen, packets dropped) as it last printed them (every 100 ms).
    #[must_use]
    pub fn counts(&self) -> (u64, u64) {
        self.lines()
            .iter()
            .rev()
            .find(|v| v["event"] == "counts")
            .map_or((0, 0), |v| {
                (
                    v["seen"].as_u64().unwrap_or(0),
                    v["dropped"].as_u64().unwrap_or(0),
                )
            })
    }

    /// Counts printed after this call (so they include every packet sent before it).
    ///
    /// # Errors
    /// When no fresh line comes within 5 s.
    pub fn fresh_counts(&self) -> Result<(u64, u64)> {
        let n = self.proc.stdout_lines().len();
        wait_until(
            "fresh neighbour counts",
            Duration::from_secs(5),
            Duration::from_millis(50),
            || Ok((self.proc.stdout_lines().len() > n + 1).then(|| self.counts())),
        )
    }

    /// Take it away: its tcx link goes with its process; its clsact filter is deleted.
    ///
    /// # Errors
    /// When `tc` cannot delete the filter.
    pub fn remove(mut self) -> Result<()> {
        self.proc.kill();
        if let Place::Clsact { priority, handle } = self.place {
            let (p, h) = (priority.to_string(), format!("{handle:#x}"));
            crate::cmd::run(&mut crate::cmd::in_netns(
                &self.ns,
                "tc",
                &[
                    "filter", "del", "dev", DEV, "egress", "pref", &p, "handle", &h, "bpf",
                ],
            ))?;
        }
        Ok(())
    }
}

/// One TCP connection attempt from `ns` to `to`: "connected", "refused" (an RST came back:
/// the SYN got through), "timeout" (dropped on the way) or "error".
///
/// # Errors
/// When the fixture cannot run.
pub fn connect(ns: &NetNs, to: SocketAddr, within: Duration) -> Result<String> {
    let bin = crate::paths::fixture("lab-tc")?
        .to_string_lossy()
        .into_owned();
    let (to, ms) = (to.to_string(), within.as_millis().to_string());
    let out = ns.exec(&bin, &["connect", "--to", &to, "--within-ms", &ms])?;
    let v: Value = serde_json::from_str(out.trim()).with_context(|| format!("lab-tc: {out}"))?;
    Ok(v["result"].as_str().unwrap_or("error").to_owned())
}
