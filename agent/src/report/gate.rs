//! The bound both servers keep (metrics over TCP, the status socket): at most `cap` clients
//! at once, each holding one descriptor (and a task or a thread) until it is answered or its
//! deadline passes. A client past the cap is closed at once and counted, never queued, so a
//! neighbour that opens thousands of idle connections costs the agent `cap` descriptors, not
//! thousands (the unit's `LimitNOFILE` leaves room for both caps: packaging/lifeline.service).
//! An accept that fails (`EMFILE`, `ENFILE`, `ENOBUFS`...) is counted and followed by a short
//! pause rather than ending the server: the waiting connection stays in the listen queue, so
//! retrying at once would spin.

use std::{
    io,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use prometheus_client::metrics::counter::Counter;

/// After a failed accept: long enough not to spin, short enough that a client that comes
/// once descriptors are back waits no longer than this.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Where a server counts what it turned away (the families in report/metrics/servers.rs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Turned {
    /// Clients closed at once because `cap` others were being served.
    pub refused: Counter,
    /// Clients dropped at their deadline (too slow to send the request or read the answer).
    pub timeouts: Counter,
    /// Failed accepts.
    pub accept_errors: Counter,
}

/// One server's bound; a clone is the same bound.
#[derive(Clone, Debug)]
pub(crate) struct Gate(Arc<Bound>);

#[derive(Debug)]
struct Bound {
    server: &'static str,
    cap: usize,
    active: AtomicUsize,
    turned: Turned,
}

/// A client being served; its place is given back when this is dropped.
#[derive(Debug)]
pub(crate) struct Permit(Arc<Bound>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Gate {
    #[must_use]
    pub(crate) fn new(server: &'static str, cap: usize, turned: Turned) -> Self {
        Self(Arc::new(Bound {
            server,
            cap,
            active: AtomicUsize::new(0),
            turned,
        }))
    }

    /// A place for a client just accepted, or None (counted) when `cap` are served: the
    /// caller then drops the connection.
    #[must_use]
    pub(crate) fn admit(&self) -> Option<Permit> {
        let g = &*self.0;
        let taken = g
            .active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < g.cap).then_some(n + 1)
            });
        if taken.is_ok() {
            return Some(Permit(Arc::clone(&self.0)));
        }
        self.refuse();
        None
    }

    /// A client that could not be served for want of resources (no thread): as past the cap.
    pub(crate) fn refuse(&self) {
        let n = self.0.turned.refused.inc() + 1;
        // Logged at 1, 2, 4, 8...: a flood is seen in the log without flooding it.
        if n.is_power_of_two() {
            tracing::warn!(
                server = self.0.server,
                refused = n,
                cap = self.0.cap,
                "{} server: a client closed unserved ({} so far): {} clients at once at most",
                self.0.server,
                n,
                self.0.cap
            );
        }
    }

    /// A client dropped at its deadline.
    pub(crate) fn timed_out(&self) {
        self.0.turned.timeouts.inc();
    }

    /// Counts a failed accept and says how long to pause before the next one.
    #[must_use]
    pub(crate) fn accept_failed(&self, e: &io::Error) -> Duration {
        let n = self.0.turned.accept_errors.inc() + 1;
        if n.is_power_of_two() {
            tracing::warn!(
                server = self.0.server,
                error = %e,
                accept_errors = n,
                "{} server: accept failed ({e}; {n} so far): pausing {} ms, then accepting again",
                self.0.server,
                ACCEPT_PAUSE.as_millis()
            );
        }
        ACCEPT_PAUSE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_is_refused_and_counted_until_a_place_is_given_back() {
        let turned = Turned::default();
        let gate = Gate::new("test", 2, turned.clone());
        let (a, b) = (gate.admit(), gate.admit());
        assert!(a.is_some() && b.is_some());
        assert!(gate.admit().is_none());
        assert!(gate.clone().admit().is_none(), "a clone is the same bound");
        assert_eq!(turned.refused.get(), 2);
        drop(a);
        assert!(gate.admit().is_some());
        let pause = gate.accept_failed(&io::Error::from_raw_os_error(libc::EMFILE));
        assert_eq!((pause, turned.accept_errors.get()), (ACCEPT_PAUSE, 1));
        gate.timed_out();
        assert_eq!(turned.timeouts.get(), 1);
    }
}
