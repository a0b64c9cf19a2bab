//! What the daemon tells others: the counts after every sweep (metrics, systemd's STATUS=),
//! and the whole table of sockets when `lifeline status` asks for it (built then, from a
//! whole read of the map, so a sweep never formats 100,000 rows nobody reads).

use std::time::{Duration, Instant};

use anyhow::Result;
use lifeline_common::{SockState, config::stats};

use crate::{clock, judge, snapshot, status::Snapshot};

use super::Daemon;

impl Daemon {
    /// The counts and settings, after every sweep.
    pub(super) fn publish(&mut self) {
        if let Some(f) = &self.follow {
            f.prober.prune();
        }
        let summary = self.summary();
        self.status.send_replace(summary);
    }

    fn summary(&self) -> Snapshot {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Snapshot {
            stall_timeout_ms: ms(self.judge.settings.stall),
            silent_timeout_ms: self.judge.idle.silent.map(|s| ms(s.after)),
            kills: self.judge.kills(),
            holds: self.follow.as_ref().map_or(0, |f| f.guard.holds),
            endpoint_source: self.follow.as_ref().map(|f| f.source.to_string()),
            sockets_full: self.sockets_full,
            endpoints: self
                .follow
                .as_ref()
                .map(|f| f.endpoints.status(Instant::now()))
                .unwrap_or_default(),
            targets: self.watching.status.clone(),
            watched: u64::try_from(self.mirror.len()).unwrap_or(u64::MAX),
            verdicts: self
                .tally
                .counts()
                .map(|(v, n)| (v.label().to_owned(), n))
                .collect(),
            sockets: Vec::new(),
        }
    }

    /// The summary with a row per watched socket, read from the map now: each with its
    /// verdict from its last visit and, when it was looked at in the last sweep, the
    /// kernel's `tcp_info`.
    ///
    /// # Errors
    /// When the probe's map cannot be read.
    pub fn full_snapshot(&self) -> Result<Snapshot> {
        let records = self.probe.sockets()?;
        let now = clock::now_ns();
        let mut out = self.summary();
        out.sockets = records
            .iter()
            .map(|(cookie, rec)| {
                let verdict = self
                    .tally
                    .get(*cookie)
                    .unwrap_or_else(|| self.judge.between(*cookie, rec, now));
                let info = self.looked.get(cookie);
                let keepalive =
                    judge::idle::describe(rec, &self.judge.idle.want, self.probe.can_adopt);
                let mut row = snapshot::row(*cookie, rec, info, verdict, keepalive, now);
                if let Some((endpoint, member)) = self
                    .follow
                    .as_ref()
                    .and_then(|f| f.endpoints.membership(rec.peer(), f.grace))
                {
                    row.endpoint = Some(endpoint);
                    row.endpoint_member = Some(member.label().to_owned());
                }
                row
            })
            .collect();
        Ok(out)
    }

    pub(crate) fn report_unreadable(
        &mut self,
        cookie: u64,
        rec: &SockState,
        e: &crate::diag::DiagError,
    ) {
        if self.unreadable.insert(cookie) {
            crate::metrics::get().decision(&crate::metrics::Decision {
                verdict: "unknown",
                action: "none",
                outcome: "unreadable",
                trouble_age_ms: 0,
            });
            tracing::warn!(target: "lifeline::decision", peer = %rec.peer(), local = %rec.local(), action = "none",
                outcome = "unreadable", error = %e, "cannot read the kernel's state of a suspect socket; not acting on it");
        }
    }

    /// A full map means sockets go unwatched: say so loudly, every time it grows. Returns
    /// the probe's count of lost news.
    pub(super) fn check_capacity(&mut self) -> Result<u64> {
        let counters = self.probe.stats()?;
        let full = counters[stats::SOCKETS_FULL as usize];
        if full > self.sockets_full {
            tracing::error!(
                not_watched = full,
                new = full - self.sockets_full,
                "SOCKETS map is full: new sockets are NOT watched; raise --max-sockets"
            );
            self.sockets_full = full;
        }
        Ok(counters[stats::NEWS_LOST as usize])
    }
}
