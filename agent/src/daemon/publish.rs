//! What the daemon tells others after every sweep: the counts (metrics, systemd's STATUS=),
//! the probe's own counters among them.
//! The table of sockets is built only when `lifeline status` asks (`table.rs`).

use std::time::{Duration, Instant};

use anyhow::Result;
use lifeline_common::config::stats;

use super::Daemon;
use crate::{
    act::{Decided, DecisionAction, OutcomeClass},
    judge::{Cookie, Record},
    report::status::{Capacity, Snapshot},
};

impl Daemon {
    /// The counts and settings, after every sweep.
    pub(super) fn publish(&mut self) {
        if let Some(f) = &self.follow {
            f.prober.prune();
        }
        let summary = self.summary();
        self.status.send_replace(summary);
    }

    pub(super) fn summary(&self) -> Snapshot {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Snapshot {
            stall_timeout_ms: ms(self.judge.stall().after),
            stall_unanswered: self.judge.stall().unanswered,
            silent_timeout_ms: self.judge.silence().map(|s| ms(s.after)),
            kills: self.judge.kills(),
            holds: self.follow.as_ref().map_or(0, |f| f.guard.holds),
            restore_on_stop: self.defer.restore_text().to_owned(),
            deferred: u64::try_from(self.tracked.deferred_count()).unwrap_or(u64::MAX),
            path_down_ms: self
                .judge
                .path_down_since()
                .map(|t| ms(self.clock.now() - t)),
            endpoint_source: self.follow.as_ref().map(crate::endpoint::Follow::describe),
            sockets_full: self.sockets_full,
            capacity: Capacity::new(&self.probe_stats, self.inbox_dropped),
            endpoints: self
                .follow
                .as_ref()
                .map(|f| f.endpoints.status(Instant::now()))
                .unwrap_or_default(),
            targets: self.kernel.target_status(),
            watched: u64::try_from(self.mirror.len()).unwrap_or(u64::MAX),
            verdicts: self
                .judge
                .counts()
                .map(|(v, n)| (v.label().to_owned(), n))
                .collect(),
            fast_probes: self.kernel.fast_status(),
            probe_stats: self.probe_stats,
            kernel_error: None,
            sockets: Vec::new(),
        }
    }

    pub(crate) fn report_unreadable(
        &mut self,
        cookie: Cookie,
        rec: &Record,
        e: &crate::kernel::diag::DiagError,
    ) {
        if self.tracked.tell_unreadable(cookie) {
            let d = Decided {
                verdict: "unknown",
                did: DecisionAction::Nothing,
                class: OutcomeClass::Unreadable,
                trouble_age_ms: 0,
            };
            self.counts.count(&d);
            tracing::warn!(target: "lifeline::decision", peer = %rec.peer, local = %rec.local, action = d.did.label(),
                outcome = d.class.text(), error = %e, "cannot read the kernel's state of a suspect socket; not acting on it");
        }
    }

    /// A full map means sockets go unwatched: say so loudly, every time it grows; so for
    /// the endpoint clients' share and for news the inbox dropped. Keeps the probe's
    /// counters for the summary; returns the news lost in the kernel and in the inbox
    /// (either way the whole map is re-read).
    pub(super) fn check_capacity(&mut self) -> Result<u64> {
        let counters = self.kernel.stats()?;
        let was = Capacity::new(&self.probe_stats, self.inbox_dropped);
        self.probe_stats = counters;
        self.inbox_dropped = self.kernel.news_dropped();
        let now = Capacity::new(&counters, self.inbox_dropped);
        let full = counters[stats::SOCKETS_FULL as usize];
        if full > self.sockets_full {
            tracing::error!(
                not_watched = full,
                new = full - self.sockets_full,
                "SOCKETS map is full: new sockets are NOT watched; raise --max-sockets"
            );
            self.sockets_full = full;
        }
        if now.endpoint_quota_full > was.endpoint_quota_full {
            tracing::error!(
                not_watched = now.endpoint_quota_full,
                new = now.endpoint_quota_full - was.endpoint_quota_full,
                "the endpoint clients' share of SOCKETS is full: new sockets watched only for their peer are NOT watched"
            );
        }
        if now.inbox_dropped > was.inbox_dropped {
            tracing::warn!(
                dropped = now.inbox_dropped,
                new = now.inbox_dropped - was.inbox_dropped,
                "the probe's news came faster than the sweeps took it: news dropped, every record is re-read"
            );
        }
        Ok(now.news_lost.saturating_add(now.inbox_dropped))
    }
}
