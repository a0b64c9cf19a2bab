//! The decision event: one structured `tracing` event per decision, target
//! `lifeline::decision`, with its evidence as fields (journald: `LIFELINE_*`), and the kill
//! budget it spent or found spent (`budget`: the socket's target). Each event is counted in
//! the metrics from the same typed values (`decided.rs`).

use std::time::Duration;

use super::{
    count::Counts,
    decided::{Decided, DecisionAction, OutcomeClass},
};
use crate::judge::{Action, Budget, Kill, Outcome, Reason, Record, TcpInfo, Trouble, Verdict};

/// The decision event for a kill decided and carried out (or held back).
pub(crate) fn log_decision(counts: &Counts, ev: &Kill, action: Action, outcome: &Outcome) {
    // Decided on the typed values; the strings below are only what the event shows.
    let failed = matches!(outcome, Outcome::Failed(_));
    let hold = match (action, outcome) {
        (Action::Hold, _) => "; no healthy endpoint, holding".to_owned(),
        (_, Outcome::RateLimited) => match &ev.whose.budget {
            // Within its own budget it may still meet a shared bound (`judge::budget`).
            b @ Budget::EndpointClient { .. } => format!(
                " (the kill budget of {b}, its cgroup's or all endpoint clients' together, is spent for this minute)"
            ),
            b => format!(" (the kill budget of {b} is spent for this minute)"),
        },
        _ => String::new(),
    };
    let did = DecisionAction::from(action);
    let action = did.label();
    let class = OutcomeClass::from(outcome);
    let outcome = outcome.label();
    let outcome = outcome.as_ref();
    let r = &ev.rec;
    let owner_comm = r.comm().unwrap_or("-");
    let e = ev.evidence;
    let trouble_age_ms = r.trouble.map_or(0, |t| e.at().ms_since(t));
    // The evidence and the socket's last sign of life, aged at the look that confirmed it:
    // the evidence began after that life (`Evidence::new`), so evidence_age_ms never
    // exceeds life_age_ms, which a reader of the log can check.
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let evidence_age_ms = ms(e.age(e.at()));
    let life_age_ms = ms(e.at().saturating_duration_since(e.life()));
    let (peer, local, i) = (r.peer, r.local, &ev.info);
    let verdict = ev.reason.verdict();
    let (endpoint, orphaned_for_ms, early) = endpoint_fields(&ev.reason);
    let why = why(&ev.reason, i);
    let budget = ev.whose.budget.to_string();
    let message = format!(
        "{verdict} socket {local} -> {peer} ({owner_comm}/{}): {why}; {action}: {outcome}{hold}",
        r.owner_pid
    );
    counts.count(&Decided {
        verdict,
        did,
        class,
        trouble_age_ms,
    });
    macro_rules! decision {
        ($lvl:ident) => {
            tracing::$lvl!(
                target: "lifeline::decision",
                peer = %peer,
                local = %local,
                owner_pid = r.owner_pid,
                owner_comm,
                verdict,
                action,
                outcome,
                endpoint,
                orphaned_for_ms,
                early,
                budget,
                last_ack_age_ms = i.last_ack_recv_ms,
                life_age_ms,
                evidence_age_ms,
                trouble_age_ms,
                unacked_segs = i.unacked,
                unacked_bytes = r.unacked_bytes,
                retransmits = r.retrans_count,
                rto_count = r.rto_count,
                unanswered_rtos = i.retransmits,
                total_retrans = i.total_retrans,
                keepalive_probes = i.probes,
                probe_bytes = r.probe_bytes,
                "{message}"
            )
        };
    }
    if failed {
        decision!(error);
    } else {
        decision!(warn);
    }
}

/// The decision's reason in words, with the kernel's counts it rests on.
fn why(reason: &Reason, i: &TcpInfo) -> String {
    match reason {
        Reason::Dead(Verdict::Silent) => format!(
            "idle, {} keepalive probes unanswered, nothing from the peer for {} ms",
            i.probes, i.last_ack_recv_ms
        ),
        Reason::Dead(_) if i.probes > 0 => format!(
            "{} keepalive probes, then {} RTOs of the data written after them, unanswered in a row, nothing from the peer for {} ms, {} segments unacknowledged",
            i.probes, i.retransmits, i.last_ack_recv_ms, i.unacked
        ),
        Reason::Dead(_) => format!(
            "{} transmissions in a row unanswered (RTOs), no ACK for {} ms, {} segments unacknowledged",
            i.retransmits, i.last_ack_recv_ms, i.unacked
        ),
        Reason::Orphaned {
            endpoint,
            absent_for,
            trouble: None,
        } => format!(
            "its peer left {endpoint}'s address set (DNS, hosts file or the proxy's upstream list) {} s ago",
            absent_for.as_secs()
        ),
        Reason::Orphaned {
            endpoint,
            absent_for,
            trouble: Some(t),
        } => early_why(endpoint, *absent_for, *t, i),
        Reason::DeadPeer { .. } => format!(
            "{} fresh connections to its peer all timed out",
            crate::endpoint::connect::PROBE_TRIES
        ),
    }
}

/// The decision's endpoint fields: the endpoint, how long its peer has been out of the
/// endpoint's set, and for an orphan migrated at once, the failed round trip that made it so.
fn endpoint_fields(reason: &Reason) -> (Option<&str>, Option<u64>, Option<&'static str>) {
    match reason {
        Reason::Orphaned {
            endpoint,
            absent_for,
            trouble,
        } => (
            Some(endpoint.as_str()),
            Some(u64::try_from(absent_for.as_millis()).unwrap_or(u64::MAX)),
            trouble.map(Trouble::label),
        ),
        Reason::DeadPeer { endpoint, .. } => (endpoint.as_deref(), None, None),
        Reason::Dead(_) => (None, None, None),
    }
}

/// Why an orphan is migrated at once ("orphan, unanswered: ..."), with its evidence.
fn early_why(endpoint: &str, absent_for: Duration, t: Trouble, i: &TcpInfo) -> String {
    let failed = match t {
        Trouble::Unanswered => format!(
            "its last keepalive probe went unanswered ({} out, nothing from the peer for {} ms)",
            i.probes, i.last_ack_recv_ms
        ),
        Trouble::Retransmitting => format!(
            "{} retransmission timeouts fired with {} segments unacknowledged",
            i.retransmits, i.unacked
        ),
    };
    format!(
        "orphan, {}: its peer left {endpoint}'s address set (DNS, hosts file or the proxy's upstream list) {} ms ago and {failed}; migrated now, not within the spread",
        t.label(),
        absent_for.as_millis()
    )
}

/// `--on-orphan log`: an orphaned socket, reported once and left alone.
pub(crate) fn log_orphan_report(
    counts: &Counts,
    rec: &Record,
    endpoint: &str,
    absent_for: Duration,
) {
    let (peer, local) = (rec.peer, rec.local);
    let orphaned_for_ms = u64::try_from(absent_for.as_millis()).unwrap_or(u64::MAX);
    let d = Decided {
        verdict: "orphaned",
        did: DecisionAction::Nothing,
        class: OutcomeClass::Policy,
        trouble_age_ms: 0,
    };
    counts.count(&d);
    tracing::warn!(target: "lifeline::decision", peer = %peer, local = %local, verdict = d.verdict,
        action = d.did.label(), outcome = d.class.text(), endpoint = %endpoint, orphaned_for_ms,
        "orphaned socket {local} -> {peer}: its peer left {endpoint}'s address set (DNS, hosts file or the proxy's upstream list); --on-orphan log: not acting");
}
