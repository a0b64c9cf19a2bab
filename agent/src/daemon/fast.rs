//! Driving the fast keepalive probes (`lifeline_common::poke`): the kernel opens a socket's
//! phase at its first unanswered probe and closes it when a probe is answered, the limit is
//! reached or a probe left without its octet; the agent only runs the TCP iterator, whose
//! pass pokes whatever is due, every interval while a phase is open.
//!
//! A pass walks every TCP socket of the namespace, so its cost grows with the node's
//! sockets, not with lifeline's: passes are spaced at least `SHARE` times their own CPU
//! time apart (at most 2 % of a core, whatever the node), and never closer than the
//! interval. A phase the agent knows of is dropped at `BOUND_NS` whatever the kernel says.
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
use crate::judge::Mono;

/// Passes are at least this many times their own CPU time apart.
const SHARE: u32 = 50;

/// At most this many open phases are read before a pass; with more, the pass is cheaper.
const READ_FIRST: usize = 16;

/// The passes' pacing. Which phases are open, and since when, is each socket's own
/// (`Tracked::fast_since`, `tracked.rs`).
#[derive(Default)]
pub(super) struct FastPhases {
    last_pass: Option<Mono>,
    /// The last pass's CPU time.
    last_cost: Duration,
}

impl FastPhases {
    /// A phase opened at `at` (a socket's first keepalive probe went unanswered), `first`
    /// when no other was open. Its first poke is due an interval later: when no phase was
    /// open, the next pass is counted from now, not from the last one.
    pub(super) fn opened(&mut self, first: bool, at: Mono) {
        if first {
            self.last_pass = Some(at);
        }
    }

    /// When the next pass is due (`now` when none ran yet); `None` while no phase is open
    /// (`any_open`).
    #[must_use]
    pub(super) fn due(&self, any_open: bool, interval: Duration, now: Mono) -> Option<Mono> {
        if !any_open {
            return None;
        }
        let Some(last) = self.last_pass else {
            return Some(now);
        };
        Some(last + interval.max(self.last_cost * SHARE))
    }
}

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
        self.fast.last_cost = thread_cpu().saturating_sub(cpu);
        self.fast.last_pass = Some(start);
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
                Ok(_) => answered.push(cookie),
                Err(_) => return false,
            }
        }
        for cookie in answered {
            self.kernel.fast_close(cookie);
            self.tracked.close_fast(cookie);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_wait_for_the_interval_or_fifty_times_their_cost() {
        let mut f = FastPhases::default();
        let ms = Duration::from_millis;
        let t = Mono::from_secs(100);
        assert_eq!(f.due(false, ms(100), t), None, "no phase, no pass");
        f.opened(true, t);
        assert_eq!(
            f.due(true, ms(100), t),
            Some(t + ms(100)),
            "the first poke, an interval on"
        );
        f.last_cost = ms(1);
        assert_eq!(f.due(true, ms(100), t), Some(t + ms(100)));
        f.last_cost = ms(4);
        assert_eq!(
            f.due(true, ms(100), t),
            Some(t + ms(200)),
            "a 4 ms pass: 200 ms apart"
        );
        assert_eq!(f.due(false, ms(100), t), None);
    }
}
