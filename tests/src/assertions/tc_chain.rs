//! What is on the client's egress tc chain, as `tc` and the kernel list it, and what the
//! agent says about its place there (`lifeline status --json`'s `fast_probes`).

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use crate::fixtures::agent::Agent;
use crate::fixtures::tc_neighbour::{DEV, Neighbour};
use crate::infra::netns::NetNs;

/// The agent's tc program (`Hook::ProbeByte`); the kernel keeps 15 characters of a
/// program's name (`BPF_OBJ_NAME_LEN`), which is what a tcx listing shows.
pub const PROGRAM: &str = "lifeline_probe_byte";

/// One clsact egress filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub priority: u16,
    pub handle: u32,
    pub name: Option<String>,
}

/// The filters on `DEV`'s clsact egress (`tc -j filter show`), none without clsact.
///
/// # Errors
/// When `tc` fails or prints something else than its JSON.
pub fn filters(ns: &NetNs) -> Result<Vec<Filter>> {
    let out = ns.exec("tc", &["-j", "filter", "show", "dev", DEV, "egress"])?;
    let v: Value = serde_json::from_str(out.trim()).unwrap_or(Value::Array(Vec::new()));
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let o = f.get("options")?;
            let handle = o.get("handle")?.as_str()?.trim_start_matches("0x");
            Some(Filter {
                priority: u16::try_from(f.get("pref")?.as_u64()?).ok()?,
                handle: u32::from_str_radix(handle, 16).ok()?,
                name: o.get("bpf_name").and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect())
}

/// Whether `DEV` has a clsact qdisc.
///
/// # Errors
/// When `tc` fails.
pub fn has_clsact(ns: &NetNs) -> Result<bool> {
    let out = ns.exec("tc", &["-j", "qdisc", "show", "dev", DEV])?;
    Ok(out.contains(r#""kind":"clsact""#))
}

/// The programs of `DEV`'s tcx egress chain, in order; `None` without tcx (before 6.6).
///
/// # Errors
/// When the fixture fails.
pub fn tcx(ns: &NetNs) -> Result<Option<Vec<String>>> {
    let bin = crate::infra::paths::fixture("lab-tc")?
        .to_string_lossy()
        .into_owned();
    let out = ns.exec(&bin, &["tcx", "--dev", DEV])?;
    let v: Value = serde_json::from_str(out.trim()).with_context(|| format!("lab-tc: {out}"))?;
    Ok(v["tcx"].as_array().map(|a| {
        a.iter()
            .map(|n| n.as_str().unwrap_or("").to_owned())
            .collect()
    }))
}

/// lifeline's attachments on `DEV`: its tcx links and its clsact filters.
///
/// # Errors
/// As `filters` and `tcx`.
pub fn lifeline_on_dev(ns: &NetNs) -> Result<(usize, Vec<Filter>)> {
    let short = &PROGRAM[..15];
    let links = tcx(ns)?
        .unwrap_or_default()
        .iter()
        .filter(|n| n.as_str() == short)
        .count();
    let mine = filters(ns)?
        .into_iter()
        .filter(|f| f.name.as_deref() == Some(PROGRAM))
        .collect();
    Ok((links, mine))
}

/// Packets `DEV` sent (its `/proc/net/dev` transmit count, in `ns`).
///
/// # Errors
/// When the count cannot be read.
pub fn tx_packets(ns: &NetNs) -> Result<u64> {
    let text = ns.exec("cat", &["/proc/net/dev"])?;
    text.lines()
        .find_map(|l| {
            let (name, rest) = l.split_once(':')?;
            (name.trim() == DEV).then(|| rest.split_whitespace().nth(9)?.parse().ok())?
        })
        .with_context(|| format!("no {DEV} in /proc/net/dev:\n{text}"))
}

/// The agent's `fast_probes` status, as its JSON says it.
pub struct Fast {
    /// "off", "unavailable", "on", "hidden".
    pub state: String,
    pub summary: String,
    pub devices: Vec<FastDevice>,
}

pub struct FastDevice {
    pub device: String,
    /// "unmeasured", "out", "hidden".
    pub reach: String,
    pub chain: Value,
}

/// The agent's `fast_probes` status.
///
/// # Errors
/// When the status cannot be read or lacks the object.
pub fn fast(agent: &Agent) -> Result<Fast> {
    let v = agent.status_json()?;
    let f = v
        .get("fast_probes")
        .with_context(|| format!("no fast_probes in {v}"))?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let devices = (f
        .get("devices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .map(|d| FastDevice {
        device: s(d, "device"),
        reach: s(d, "reach"),
        chain: d.get("chain").cloned().unwrap_or(Value::Null),
    })
    .collect();
    Ok(Fast {
        state: s(f, "state"),
        summary: s(f, "summary"),
        devices,
    })
}

/// Packets `DEV` sent and each neighbour saw, from a moment on: every packet that left
/// passed each neighbour (a neighbour also sees what a later one drops).
pub struct Tally {
    tx: u64,
    seen: Vec<u64>,
}

impl Tally {
    /// # Errors
    /// When a count cannot be read.
    pub fn start(ns: &NetNs, neighbours: &[&Neighbour]) -> Result<Self> {
        let tx = tx_packets(ns)?;
        let seen = neighbours.iter().map(|n| n.counts().0).collect();
        Ok(Self { tx, seen })
    }

    /// Asserts that at least `min` packets left and that each neighbour saw every one of
    /// them (two of slack: a count line is up to 100 ms old at the start). Returns the
    /// packets sent.
    ///
    /// # Errors
    /// When a neighbour missed packets, or too few left to tell.
    pub fn every_packet_passed(
        &self,
        ns: &NetNs,
        neighbours: &[&Neighbour],
        min: u64,
    ) -> Result<u64> {
        let mut seen = Vec::new();
        for n in neighbours {
            seen.push(n.fresh_counts()?.0);
        }
        let sent = tx_packets(ns)? - self.tx;
        ensure!(
            sent >= min,
            "only {sent} packets left {DEV}: too few to tell"
        );
        for ((n, before), now) in neighbours.iter().zip(&self.seen).zip(seen) {
            ensure!(
                now - before + 2 >= sent,
                "the neighbour {:?}/{:?} (drops port {}) saw {} of the {sent} packets {DEV} sent",
                n.place,
                n.verdict,
                n.port,
                now - before
            );
        }
        Ok(sent)
    }
}
