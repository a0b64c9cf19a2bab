//! `lifeline status`: the daemon answers on a Unix socket with a snapshot built for the
//! request; the command reads it and prints a table (or the JSON).

pub mod server;
pub mod socket;

use std::{
    io::{Read as _, Write},
    os::unix::net::UnixStream,
    path::Path,
};

use anyhow::{Context as _, Result, anyhow};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub stall_timeout_ms: u64,
    /// `None` when keepalive is off.
    pub silent_timeout_ms: Option<u64>,
    pub kills: u64,
    /// Batches of kills held back because no endpoint address accepted a connection.
    pub holds: u64,
    /// Where the endpoints came from ("kubelet pid 812 --kubeconfig ..."); `None` without.
    pub endpoint_source: Option<String>,
    pub endpoints: Vec<crate::endpoint::EndpointStatus>,
    /// Sockets the probe could not record because its map was full.
    pub sockets_full: u64,
    /// Each watch target and its state (`present`, `waiting`, `active`).
    #[serde(default)]
    pub targets: Vec<crate::watch::TargetStatus>,
    /// Watched sockets, and how many have each verdict (every verdict listed).
    #[serde(default)]
    pub watched: u64,
    #[serde(default)]
    pub verdicts: std::collections::BTreeMap<String, u64>,
    /// The probe's counters (`STATS`, indexed by `lifeline_common::config::stats`) as read
    /// at the sweep: for the metrics, not part of what `lifeline status` shows.
    #[serde(skip)]
    pub probe_stats: [u64; lifeline_common::config::stats::LEN as usize],
    /// Why the rows are the agent's records of its last sweep rather than the kernel's view
    /// at the request: the `sock_diag` dump failed. Left out when it worked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_error: Option<String>,
    /// A row per watched socket: filled for `lifeline status`, empty in the summary the
    /// daemon publishes after every sweep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sockets: Vec<SocketStatus>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocketStatus {
    pub cookie: u64,
    pub local: String,
    pub peer: String,
    /// The kernel's TCP state at the request, as `ss` names it ("ESTABLISHED",
    /// "FIN-WAIT-1", ...); absent when the kernel could not be asked.
    #[serde(default)]
    pub state: Option<String>,
    pub owner_pid: Option<u32>,
    pub owner_comm: Option<String>,
    /// "no owner" (no process holds the socket any more) or "exited" (the recorded owner
    /// has exited, another process holds it); absent while the owner holds it.
    #[serde(default)]
    pub owner_state: Option<String>,
    pub established_age_ms: u64,
    pub last_ack_age_ms: u64,
    #[serde(default)]
    pub last_data_sent_age_ms: Option<u64>,
    #[serde(default)]
    pub last_data_recv_age_ms: Option<u64>,
    pub trouble_age_ms: Option<u64>,
    pub unacked_segs: u32,
    pub unacked_bytes: u32,
    pub retransmits: u32,
    pub rto_count: u32,
    /// Every retransmission of the socket's life (the kernel's count).
    #[serde(default)]
    pub total_retrans: Option<u32>,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub verdict: String,
    /// Keepalive in force ("10s,3s,3"), "off", or why it is not armed.
    pub keepalive: String,
    /// Keepalive probes unanswered, when the kernel's `tcp_info` was read in this sweep.
    pub keepalive_probes: Option<u8>,
    /// The endpoint on this peer's port, and where its peer's address stands in that
    /// endpoint's answers: "in-set", "leaving", "orphaned", "unknown" (no answer yet) or
    /// "never-held" (no answer held it).
    pub endpoint: Option<String>,
    pub endpoint_member: Option<String>,
    /// With `endpoint`: whether the socket is the endpoint's connection (its address was in
    /// the answers when it connected, when lifeline adopted it, or since). Only these are
    /// judged by DNS; the others by stall and silence alone.
    #[serde(default)]
    pub endpoint_socket: Option<bool>,
    /// "`sock_ops`" (seen at its connect) or "adopted" (older than the agent).
    pub source: String,
    /// For an adopted socket whose callbacks the kernel could not arm: why; the agent then
    /// reads its `tcp_info` every sweep (shown as SOURCE `polled`).
    #[serde(default)]
    pub polled: Option<String>,
    /// Why it is watched: "cgroup", "comm", "endpoint" (what `--cgroup`, `--comm` and
    /// `--endpoint-clients` select).
    #[serde(default)]
    pub watched_by: Vec<String>,
}

/// Read the running daemon's snapshot.
///
/// # Errors
/// When no daemon answers at `path`, or its answer is not a snapshot.
pub fn fetch(path: &Path) -> Result<Snapshot> {
    let mut body = Vec::new();
    copy_json(path, &mut body)?;
    serde_json::from_slice(&body).context("the daemon's status is not valid JSON")
}

/// `lifeline status --json`: the daemon's answer copied to `out` as it arrives, so 100,000
/// sockets' 35 MB are neither parsed nor held only to be printed again. Nothing is written
/// unless the answer starts as a JSON object.
///
/// # Errors
/// When no daemon answers at `path`, or its answer is not a JSON object.
pub fn copy_json(path: &Path, out: &mut impl Write) -> Result<()> {
    let mut conn = UnixStream::connect(path).map_err(|e| {
        anyhow!(
            "cannot reach the lifeline daemon at {}: {e} (is `lifeline run` running?)",
            path.display()
        )
    })?;
    let mut buf = vec![0u8; 1 << 16];
    let mut first = true;
    let mut last = 0u8;
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("reading the daemon's status"),
        };
        anyhow::ensure!(
            !first || buf[0] == b'{',
            "the daemon's status is not a JSON object"
        );
        first = false;
        last = buf[n - 1];
        out.write_all(&buf[..n]).context("writing the status")?;
    }
    anyhow::ensure!(
        !first && last == b'}',
        "the daemon's status is not a JSON object"
    );
    Ok(())
}

/// `lifeline status --json`: the answer on stdout, then a newline.
///
/// # Errors
/// As `copy_json`.
pub fn print_json(path: &Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
    copy_json(path, &mut out)?;
    writeln!(out).context("writing the status")
}

/// The table `lifeline status` prints.
#[must_use]
pub fn render(s: &Snapshot) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "watched sockets: {}   stall-timeout: {} ms   silent-timeout: {}   kills: {}{}\n",
        s.sockets.len(),
        s.stall_timeout_ms,
        s.silent_timeout_ms
            .map_or_else(|| "off (no keepalive)".to_owned(), |t| format!("{t} ms")),
        s.kills,
        if s.sockets_full > 0 {
            format!("   NOT WATCHED (map full): {}", s.sockets_full)
        } else {
            String::new()
        }
    );
    for t in &s.targets {
        let id = t
            .cgroup_id
            .map_or_else(String::new, |id| format!(" (id {id})"));
        let since = t
            .since_ms
            .map_or_else(String::new, |ms| format!(" for {}", secs(ms)));
        let _ = writeln!(out, "target {}: {}{id}{since}", t.target, t.state);
    }
    if let Some(source) = &s.endpoint_source {
        let _ = writeln!(out, "endpoints from: {source}");
    }
    for e in &s.endpoints {
        let age = e
            .last_refresh_age_ms
            .map_or_else(|| "never".to_owned(), |ms| format!("{} ago", secs(ms)));
        let err = e
            .last_error
            .as_ref()
            .map_or_else(String::new, |x| format!("   last error: {x}"));
        let _ = writeln!(
            out,
            "endpoint {}: [{}]   refreshed {age}   DNS failures: {}{err}",
            e.endpoint,
            e.addrs.join(", "),
            e.failures
        );
    }
    if s.holds > 0 {
        let _ = writeln!(out, "kills held (no healthy endpoint): {}", s.holds);
    }
    if let Some(e) = &s.kernel_error {
        let _ = writeln!(
            out,
            "the kernel's view could not be read ({e}): rows are the agent's records of its last sweep"
        );
    }
    let _ = writeln!(
        out,
        "{:<8} {:<11} {:<28} {:<28} {:<20} {:>9} {:>8} {:>8} {:>7} {:>4} {:<8} {:<9} KEEPALIVE",
        "VERDICT",
        "STATE",
        "PEER",
        "LOCAL",
        "OWNER",
        "LAST-ACK",
        "TROUBLE",
        "UNACKED",
        "RETRANS",
        "RTO",
        "SOURCE",
        "IN-SET"
    );
    for k in &s.sockets {
        socket_line(&mut out, k);
    }
    outside_notes(s, &mut out);
    // Polled sockets get one line saying why, not a column of repeats.
    if let Some(why) = s.sockets.iter().find_map(|k| k.polled.as_ref()) {
        let n = s.sockets.iter().filter(|k| k.polled.is_some()).count();
        let _ = writeln!(
            out,
            "polled: {n} socket(s) older than the agent, read through sock_diag every sweep: {why}"
        );
    }
    out
}

/// The IN-SET column: where the endpoint's own socket's peer stands, or `outside` for a
/// socket on an endpoint's port that is not its connection.
fn endpoint_column(k: &SocketStatus) -> &str {
    if k.endpoint_socket == Some(false) {
        "outside"
    } else {
        k.endpoint_member.as_deref().unwrap_or("-")
    }
}

/// One line per endpoint with `outside` sockets on its port, naming the peers its answers
/// never held (a client resolving the name differently, or another service on the port).
fn outside_notes(s: &Snapshot, out: &mut String) {
    use std::{collections::BTreeMap, fmt::Write as _};
    let mut by_endpoint: BTreeMap<&str, (usize, std::collections::BTreeSet<&str>)> =
        BTreeMap::new();
    for k in s
        .sockets
        .iter()
        .filter(|k| k.endpoint_socket == Some(false))
    {
        let Some(e) = k.endpoint.as_deref() else {
            continue;
        };
        let entry = by_endpoint.entry(e).or_default();
        entry.0 += 1;
        if k.endpoint_member.as_deref() == Some("never-held") {
            entry.1.insert(&k.peer);
        }
    }
    for (e, (n, never)) in by_endpoint {
        let never = if never.is_empty() {
            String::new()
        } else {
            let peers: Vec<&str> = never.into_iter().collect();
            format!("; addresses its answers never held: {}", peers.join(", "))
        };
        let _ = writeln!(
            out,
            "outside: {n} socket(s) on {e}'s port are not its connections, judged by stall and silence only, never by DNS{never}"
        );
    }
}

/// One socket's line of the table. OWNER says `no owner` once no process holds the socket,
/// and `COMM/PID exited` when the recorded owner is gone and another process holds it.
fn socket_line(out: &mut String, k: &SocketStatus) {
    use std::fmt::Write as _;
    let owner = match (&k.owner_comm, k.owner_pid, k.owner_state.as_deref()) {
        (_, _, Some("no owner")) => "no owner".to_owned(),
        (Some(c), Some(p), Some(state)) => format!("{c}/{p} {state}"),
        (Some(c), Some(p), None) => format!("{c}/{p}"),
        _ => "-".to_owned(),
    };
    let trouble = k.trouble_age_ms.map_or_else(|| "-".to_owned(), secs);
    let _ = writeln!(
        out,
        "{:<8} {:<11} {:<28} {:<28} {:<20} {:>9} {:>8} {:>8} {:>7} {:>4} {:<8} {:<9} {}{}",
        k.verdict,
        k.state.as_deref().unwrap_or("-"),
        k.peer,
        k.local,
        owner,
        secs(k.last_ack_age_ms),
        trouble,
        format!("{}/{}B", k.unacked_segs, k.unacked_bytes),
        k.retransmits,
        k.rto_count,
        if k.polled.is_some() {
            "polled"
        } else {
            &k.source
        },
        endpoint_column(k),
        k.keepalive,
        k.keepalive_probes
            .filter(|p| *p > 0)
            .map_or_else(String::new, |p| format!(", {p} probes unanswered"))
    );
}

fn secs(ms: u64) -> String {
    format!("{}.{}s", ms / 1000, (ms % 1000) / 100)
}
