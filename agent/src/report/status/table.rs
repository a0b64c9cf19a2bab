//! The table `lifeline status` prints from the daemon's snapshot: the summary lines, a line
//! per socket, and the notes that stand for columns of repeats.

use super::Snapshot;
use crate::{
    endpoint::Standing,
    report::snapshot::{OwnerState, StatusRow},
};

/// The table `lifeline status` prints.
#[must_use]
pub(crate) fn render(s: &Snapshot) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "watched sockets: {}   stall: {} unanswered or {} ms   silent-timeout: {}   kills: {}{}\n",
        s.sockets.len(),
        s.stall_unanswered,
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
    // The other losses, one line each (SOCKETS full is on the first line), and the
    // connects that recorded nothing, which are no loss.
    for w in s.capacity.warnings(0) {
        let _ = writeln!(out, "WARNING: {w}");
    }
    if s.capacity.owners_skipped > 0 {
        let _ = writeln!(
            out,
            "skipped connects: {} to watched ports recorded nothing (no target, not to an endpoint address)",
            s.capacity.owners_skipped
        );
    }
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
    restore_lines(&mut out, s);
    // Off, unavailable (why), on which devices, or hidden by another program on one.
    let _ = writeln!(out, "{}", s.fast_probes);
    if s.holds > 0 {
        let _ = writeln!(out, "kills held (no healthy endpoint): {}", s.holds);
    }
    if let Some(ms) = s.path_down_ms {
        let _ = writeln!(
            out,
            "the path to the API endpoint is down (for {}): no kill until it is back, then only on evidence gathered after it",
            secs(ms)
        );
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
fn endpoint_column<'a>(k: &'a StatusRow<'_>) -> &'a str {
    if k.endpoint_socket == Some(false) {
        "outside"
    } else {
        k.endpoint_member.map_or("-", Standing::as_str)
    }
}

/// One line per endpoint with `outside` sockets on its port, naming the peers its answers
/// never held (a client resolving the name differently, or another service on the port).
fn outside_notes(s: &Snapshot, out: &mut String) {
    use std::{collections::BTreeMap, fmt::Write as _};
    // The peers as text, ordered as text (as the table has always listed them).
    let mut by_endpoint: BTreeMap<&str, (usize, std::collections::BTreeSet<String>)> =
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
        if k.endpoint_member == Some(Standing::NeverHeld) {
            entry.1.insert(k.peer.to_string());
        }
    }
    for (e, (n, never)) in by_endpoint {
        let never = if never.is_empty() {
            String::new()
        } else {
            let peers: Vec<String> = never.into_iter().collect();
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
fn socket_line(out: &mut String, k: &StatusRow<'_>) {
    use std::fmt::Write as _;
    let owner = match (&k.owner_comm, k.owner_pid, k.owner_state.label()) {
        (_, _, Some(nobody)) if k.owner_state == OwnerState::Nobody => nobody.to_owned(),
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
            k.source.as_str()
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

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;

/// What a stop puts back, and the sockets deferred now (`daemon/defer.rs`).
fn restore_lines(out: &mut String, s: &Snapshot) {
    use std::fmt::Write as _;
    if !s.restore_on_stop.is_empty() {
        let _ = writeln!(out, "restore on stop: {}", s.restore_on_stop);
    }
    if s.deferred > 0 {
        let _ = writeln!(
            out,
            "keepalive deferred to the application's own deadline (lifeline only observes): {} socket(s)",
            s.deferred
        );
    }
}
