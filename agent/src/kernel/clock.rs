//! `CLOCK_MONOTONIC`: the clock `bpf_ktime_get_ns()` stamps records with, read as the judge's
//! one time type (`Mono`).

use std::sync::Arc;

use crate::judge::Mono;

/// Where the moments of the loop and the peer probes come from: the system's clock, or a
/// test's (the daemon's sweeps run against a fake kernel and a hand-moved clock).
pub(crate) trait Clock: Send + Sync {
    fn now(&self) -> Mono;
}

/// `CLOCK_MONOTONIC` itself.
pub(crate) struct System;

impl Clock for System {
    fn now(&self) -> Mono {
        now()
    }
}

/// The system's clock, to hand to the parts that read one.
#[must_use]
pub(crate) fn system() -> Arc<dyn Clock> {
    Arc::new(System)
}

/// Now, as the probe's stamps count it: nanoseconds since boot, not counting suspend.
#[must_use]
pub(crate) fn now() -> Mono {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; CLOCK_MONOTONIC cannot fail on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    Mono::from_nanos(
        u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000
            + u64::try_from(ts.tv_nsec).unwrap_or(0),
    )
}
