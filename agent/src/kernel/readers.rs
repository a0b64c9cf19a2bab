//! Tasks that drain the probe's ring buffers, woken by their fds through tokio's `AsyncFd`
//! rather than polled.

use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Result;
use lifeline_common::news::{self, News};
use tokio::{
    io::{Interest, unix::AsyncFd},
    sync::Notify,
};

use crate::kernel::probe::Probe;

/// News the inbox holds at most: a full ring buffer and a half (the kernel's holds about
/// 43,000), 1 MiB. Only a sweep that cannot keep up lets it fill; past it news is dropped
/// and counted, and the daemon then re-reads the whole map, exactly as for news the kernel
/// lost, so a flood of news costs bounded memory and nothing is missed.
pub(crate) const INBOX_CAP: usize = 65_536;
/// Taken off the ring buffer in batches of this many, each handed to the inbox at once.
const BATCH: usize = 4096;

/// News the reader has taken off the ring buffer and the next sweep has not handled yet.
#[derive(Clone, Default)]
pub(crate) struct Inbox(Arc<Mutex<Queue>>);

#[derive(Default)]
struct Queue {
    news: Vec<News>,
    /// News dropped because the inbox was full, since the start.
    dropped: u64,
}

impl Inbox {
    /// Everything received so far, oldest first; the inbox is empty afterwards.
    #[must_use]
    pub(crate) fn take(&self) -> Vec<News> {
        std::mem::take(&mut self.lock().news)
    }

    /// News dropped since the start because the inbox was full (`INBOX_CAP`).
    #[must_use]
    pub(crate) fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, batch: &mut Vec<News>) {
        let mut q = self.lock();
        let room = INBOX_CAP.saturating_sub(q.news.len()).min(batch.len());
        q.news.extend(batch.drain(..room));
        q.dropped += u64::try_from(batch.len()).unwrap_or(u64::MAX);
        batch.clear();
    }
}

/// Collect the probe's news into `inbox`, and wake the sweep at once when a watched socket
/// enters trouble (one event per episode) or its keepalive probes go unanswered, so a peer
/// probe or a look starts within milliseconds rather than at the next sweep. Other news
/// waits for the next sweep.
pub(crate) fn spawn_news_reader(
    probe: &mut Probe,
    wake: &Arc<Notify>,
    inbox: &Inbox,
) -> Result<()> {
    let ring = probe.take_news()?;
    // SAFETY: the AsyncFd owns the ring buffer, which owns its fd, so the fd stays open for
    // as long as it is registered.
    let mut fd = unsafe { AsyncFd::register_with_interest(ring, Interest::READABLE) }
        .map_err(|e| anyhow::anyhow!("watching the probe's news buffer: {e}"))?;
    let (wake, inbox) = (Arc::clone(wake), inbox.clone());
    tokio::spawn(async move {
        let mut batch = Vec::new();
        while let Ok(mut guard) = fd.readable_mut().await {
            let mut trouble = false;
            // Bounded: the kernel side holds at most 1 MiB of events.
            while let Some(item) = guard.get_inner_mut().next() {
                let Some(n) = decode(&item) else { continue };
                trouble |= matches!(n.kind, news::TROUBLE | news::UNANSWERED);
                batch.push(n);
                if batch.len() >= BATCH {
                    inbox.push(&mut batch);
                }
            }
            guard.clear_ready();
            inbox.push(&mut batch);
            if trouble {
                wake.notify_one();
            }
        }
    });
    Ok(())
}

fn decode(raw: &[u8]) -> Option<News> {
    let word = |at: usize, n: usize| raw.get(at..at + n);
    let cookie = u64::from_ne_bytes(word(0, 8)?.try_into().ok()?);
    let kind = u32::from_ne_bytes(word(8, 4)?.try_into().ok()?);
    let arg = u32::from_ne_bytes(word(12, 4)?.try_into().ok()?);
    Some(News { cookie, kind, arg })
}

/// Forward the probe's aya-log messages (map full, ...) into tracing, woken by the
/// ring buffer's fd rather than polled.
pub(crate) fn spawn_probe_logger(probe: &mut Probe) -> Result<()> {
    let logger = probe.take_logger()?;
    // SAFETY: the AsyncFd owns the logger, which owns the ring buffer's fd, so the fd
    // stays open for as long as it is registered.
    let mut fd = unsafe { AsyncFd::register_with_interest(logger, Interest::READABLE) }
        .map_err(|e| anyhow::anyhow!("watching the probe's log buffer: {e}"))?;
    tokio::spawn(async move {
        while let Ok(mut guard) = fd.readable_mut().await {
            guard.get_inner_mut().flush();
            guard.clear_ready();
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_inbox_drops_and_counts_and_takes_again_after_a_sweep() {
        let inbox = Inbox::default();
        let n = |cookie| News {
            cookie,
            kind: news::STATE,
            arg: 0,
        };
        let mut batch: Vec<News> = (0..INBOX_CAP as u64 - 1).map(n).collect();
        inbox.push(&mut batch);
        let mut more = vec![n(1), n(2), n(3)];
        inbox.push(&mut more);
        assert!(more.is_empty(), "the batch is handed over whole");
        assert_eq!(inbox.dropped(), 2, "one fitted, two did not");
        let taken = inbox.take();
        assert_eq!(taken.len(), INBOX_CAP);
        assert_eq!(
            taken.last(),
            Some(&n(1)),
            "the oldest kept, the newest dropped"
        );
        inbox.push(&mut vec![n(4)]);
        assert_eq!((inbox.take(), inbox.dropped()), (vec![n(4)], 2));
    }

    #[test]
    fn a_record_decodes_and_a_short_one_is_skipped() {
        let mut raw = 7u64.to_ne_bytes().to_vec();
        raw.extend(news::UNANSWERED.to_ne_bytes());
        raw.extend(9u32.to_ne_bytes());
        assert_eq!(
            decode(&raw),
            Some(News {
                cookie: 7,
                kind: news::UNANSWERED,
                arg: 9
            })
        );
        assert_eq!(decode(&raw[..14]), None);
    }
}
