//! Carrying deferrals out (`defer.rs` decides them): one TCP iterator pass for everything
//! pending at the end of a sweep, each result logged; and the once-a-second read of deferred
//! sockets, which answer with no news.

use std::time::Duration;

use lifeline_common::restore::Defer;

use super::{Daemon, defer_log::log};
use crate::judge::Cookie;

/// Deferred sockets are read at most this often to see whether they answer again.
const POLL: Duration = Duration::from_secs(1);

impl Daemon {
    /// Deferred sockets answer with no news: read them, at most every `POLL`.
    pub(super) fn poll_deferred(&mut self) {
        let now = self.clock.now();
        if self.tracked.deferred_count() == 0
            || self.defer.last_poll.is_some_and(|t| now - t < POLL)
        {
            return;
        }
        self.defer.last_poll = Some(now);
        for c in self.tracked.deferred_cookies() {
            let Some(rec) = self.mirror.get(c).copied() else {
                self.tracked.undefer(c);
                continue;
            };
            match self.kernel.get(rec.local, rec.peer, c) {
                Ok(None) => {
                    self.tracked.undefer(c);
                }
                Ok(Some(s)) => {
                    if let Some(info) = s.info {
                        self.defer_seen(c, &rec, &info);
                    }
                }
                Err(_) => {}
            }
        }
    }

    pub(super) fn apply_pending(&mut self) {
        let pending = std::mem::take(&mut self.defer.pending);
        if pending.is_empty() {
            return;
        }
        let entries: Vec<(Cookie, Defer)> = pending.iter().map(|(c, e, _)| (*c, *e)).collect();
        let after = match self.kernel.defer(&entries) {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), sockets = entries.len(),
                    "cannot re-time keepalive through the TCP iterator: the kernel may abort these sockets at lifeline's own count");
                return;
            }
        };
        for ((cookie, entry, say), (_, rec)) in pending.into_iter().zip(after) {
            let Some(rec) = rec else {
                self.tracked.undefer(cookie);
                continue;
            };
            self.mirror.upsert(cookie, rec);
            log(&rec, &entry, &say);
        }
    }
}
