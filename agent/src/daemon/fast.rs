//! Driving the fast keepalive probes (`lifeline_common::poke`): the kernel opens a socket's
//! phase at its first unanswered probe and closes it when a probe is answered, the limit is
//! reached or a probe left without its octet; the agent only runs the TCP iterator, whose
//! pass pokes whatever is due, every interval while a phase is open.
//!
//! A pass walks every bucket of the TCP hash and every TCP socket of the namespace, so its
//! cost grows with the node, not with lifeline's sockets: 2.5-4 ms on a 2-core VM with
//! 23 GiB (262,144 buckets) and a dozen sockets. Passes spend a CPU credit earned at 2 % of a
//! core, whatever the node (`pacing.rs`): one phase (11 pokes) runs at the interval, and a
//! node whose passes cost more than that is paced to it. Spacing every pass 50 times its own
//! cost apart, as
//! before, kept the same 2 % but stretched every phase on such a VM from 1.1 s to 1.5-2 s
//! (the idle-watch bench row's p90 from 3.0 to 3.5 s) while the agent was otherwise idle.
//! A phase the agent knows of is dropped at `BOUND_NS` whatever the kernel says.
//!
//! Most phases end by themselves: on a lossy path a probe or its answer is lost, and the
//! next probe is answered. A pass would only find that out (the iterator's first test is
//! `icsk_probes_out`, which `tcp_ack()` zeroes on any ACK) at the cost of a walk over every
//! bucket of the TCP hash, most of a node's usual-load CPU (measured: a fifth of the agent's
//! at 40 sockets and 5 % loss). So while few phases are open, their sockets are read first
//! (`sock_diag`, one hash lookup each): answered ones are closed here, and the pass runs
//! only when one still has a probe unanswered.

use std::time::Duration;

use lifeline_common::poke::BOUND_NS;

use super::Daemon;
use crate::judge::{Cookie, Mono};

/// At most this many open phases are read before a pass; with more, the pass is cheaper.
const READ_FIRST: usize = 16;

impl Daemon {
    /// How soon the run loop should call `fast_pass`; `None`: no phase open, or no fast
    /// probes.
    #[must_use]
    pub(crate) fn fast_due(&self) -> Option<Duration> {
        let interval = self.kernel.fast_interval()?;
        let now = self.clock.now();
        self.fast
            .due(self.tracked.any_fast(), interval, now)
            .map(|t| t - now)
    }

    /// One pass of the TCP iterator (it pokes the sockets that are due), then forget the
    /// phases the kernel closed and close those past their bound; no pass when every open
    /// phase's socket has been answered since (`answered_first`).
    pub(crate) fn fast_pass(&mut self) {
        if self.answered_first() {
            return;
        }
        let start = self.clock.now();
        let cpu = thread_cpu();
        if let Err(e) = self.kernel.fast_pass() {
            tracing::warn!(error = %format!("{e:#}"), "fast keepalive probes: the TCP iterator failed; probes stay at the kernel's cadence");
        }
        self.fast.passed(thread_cpu().saturating_sub(cpu), start);
        let bound = Duration::from_nanos(BOUND_NS);
        let open = self.tracked.fast_phases();
        let now = self.clock.now();
        for (cookie, since) in open {
            if now - since > bound {
                self.kernel.fast_close(cookie);
                self.tracked.close_fast(cookie);
            } else if !self.kernel.fast_open(cookie) {
                self.tracked.close_fast(cookie);
            }
        }
    }

    /// Open `cookie`'s fast phase now (`Look::hasten`: its first probe is overdue): its first
    /// pass comes an interval on, as for a phase the kernel opened. Not on a path that lost
    /// probes lately (`lossy.rs`): there the kernel's second probe opens it, as before.
    pub(super) fn hasten(&mut self, cookie: Cookie, now: Mono) {
        if self.kernel.fast_interval().is_none() || self.tracked.is_fast(cookie) {
            return;
        }
        let Some(peer) = self.mirror.get(cookie).map(|r| r.peer.ip()) else {
            return;
        };
        if self.lossy.recent(peer, now) {
            return;
        }
        if self.kernel.fast_open_now(cookie) {
            let first = self.tracked.open_fast(cookie, now);
            self.fast.opened(first, now);
        }
    }

    /// With at most `READ_FIRST` phases open, reads each one's socket: one whose probes are
    /// all answered (or that is gone) has its phase closed, as the pass would. `true` when
    /// that closed every phase (no pass needed); any failure to read leaves it to the pass.
    ///
    /// The read and the close are not atomic as the iterator's are (it holds the socket's
    /// lock), but no new phase can open between them: the probe opens one when it sends a
    /// keepalive probe with one already unanswered, so after a read of `probes_out` 0 it
    /// takes two probes, a keepalive interval (at least 1 s) apart.
    fn answered_first(&mut self) -> bool {
        let open = self.tracked.fast_phases();
        if open.len() > READ_FIRST {
            return false;
        }
        let mut answered = Vec::with_capacity(open.len());
        for (cookie, _) in open {
            let Some(rec) = self.mirror.get(cookie) else {
                return false;
            };
            let (local, peer) = (rec.local, rec.peer);
            match self.kernel.get(local, peer, cookie) {
                Ok(Some(d)) if d.info.is_some_and(|i| i.probes > 0) => return false,
                // Answered: a probe or its answer was lost, not the path.
                Ok(Some(_)) => answered.push((cookie, Some(peer.ip()))),
                Ok(None) => answered.push((cookie, None)),
                Err(_) => return false,
            }
        }
        let now = self.clock.now();
        for (cookie, peer) in answered {
            self.kernel.fast_close(cookie);
            self.tracked.close_fast(cookie);
            if let Some(p) = peer {
                self.lossy.answered(p, now);
            }
        }
        true
    }
}

/// This thread's CPU time (the pass runs the iterator in the kernel, on this thread).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the kernel to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}
