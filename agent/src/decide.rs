//! Endpoint-driven reasons to kill: a dead peer (the probe timed out twice) and an
//! orphaned peer (its address left the endpoint's DNS set). Stalled and silent sockets are
//! decided in `daemon.rs`; every reason goes through the same guard, rate limit and log.

use std::{
    collections::hash_map::RandomState,
    hash::BuildHasher as _,
    sync::OnceLock,
    time::{Duration, Instant},
};

use lifeline_common::SockState;

use crate::{action::Reason, daemon::Daemon, detect::Verdict, diag::TcpInfo, endpoint::Membership};

/// Sockets to a dead peer are killed within this, spread so a fleet does not re-dial at
/// the same instant.
const DEAD_PEER_JITTER: Duration = Duration::from_secs(1);
/// An orphaned socket due for migration but busy is looked at again this soon.
const QUIET_RECHECK: Duration = Duration::from_millis(200);
const FAR: Duration = Duration::from_hours(1);

/// A delay in `[0, max)` fixed per socket and random per agent process (and so per node).
fn jitter(cookie: u64, max: Duration) -> Duration {
    static SEED: OnceLock<RandomState> = OnceLock::new();
    let h = SEED.get_or_init(RandomState::new).hash_one(cookie);
    let max_ms = u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(h % max_ms)
}

impl Daemon {
    /// Whether the endpoint path wants `cookie` killed now, and how soon to look again.
    pub(crate) fn endpoint_reason(
        &mut self,
        cookie: u64,
        rec: &SockState,
        verdict: Verdict,
        info: &mut Option<TcpInfo>,
        member: Option<&(String, Membership)>,
        at: Instant,
    ) -> (Option<Reason>, Duration) {
        let Some(f) = self.follow.as_ref() else {
            return (None, FAR);
        };
        let (prober, migrate, spread) = (f.prober.clone(), f.migrate, f.spread);
        let peer = rec.peer();
        // First sign of trouble: an RTO or retransmission with no ACK progress since (the
        // probe clears it on progress), or keepalive probes out unanswered.
        let trouble = verdict != Verdict::Healthy && rec.trouble_ns != 0
            || info.is_some_and(|i| i.probes > 0);
        let left = matches!(
            member,
            Some((_, Membership::Leaving { .. } | Membership::Orphaned { .. }))
        );
        if trouble {
            prober.request(peer, "trouble on a watched socket");
        } else if left {
            prober.request(peer, "left the endpoint's DNS set");
        }
        let mut wake = FAR;
        if let Some(since) = prober.dead_since(peer) {
            let due = since + jitter(cookie, DEAD_PEER_JITTER);
            if at < due {
                wake = due - at;
            } else if self.fetch_info(cookie, rec, info) {
                return (
                    Some(Reason::DeadPeer {
                        endpoint: member.map(|m| m.0.clone()),
                    }),
                    FAR,
                );
            }
        }
        let Some((endpoint, Membership::Orphaned { absent_for })) = member else {
            return (None, wake);
        };
        if !migrate {
            if self.orphans_logged.insert(cookie) {
                tracing::warn!(target: "lifeline::decision", peer = %peer, local = %rec.local(), verdict = "orphaned",
                    action = "none", outcome = "policy: log", endpoint = %endpoint, orphaned_for_ms = u64::try_from(absent_for.as_millis()).unwrap_or(u64::MAX),
                    "orphaned socket {} -> {peer}: its peer left {endpoint}'s DNS set; --on-orphan log: not acting", rec.local());
            }
            return (None, wake);
        }
        let due = *self
            .migrations
            .entry(cookie)
            .or_insert_with(|| at + jitter(cookie, spread));
        if at < due {
            return (None, wake.min(due - at));
        }
        // Only at a quiet moment: with nothing in flight, no request dies with the socket.
        if self.fetch_info(cookie, rec, info) && info.is_some_and(|i| i.unacked == 0) {
            return (
                Some(Reason::Orphaned {
                    endpoint: endpoint.clone(),
                    absent_for: *absent_for,
                }),
                wake,
            );
        }
        (None, wake.min(QUIET_RECHECK))
    }

    /// The kernel's `tcp_info` for a socket about to be killed, when not read yet.
    fn fetch_info(&mut self, cookie: u64, rec: &SockState, info: &mut Option<TcpInfo>) -> bool {
        if info.is_none()
            && let Ok(Some(d)) = self.diag.get(rec.local(), rec.peer(), cookie)
        {
            *info = d.info;
        }
        info.is_some()
    }
}
