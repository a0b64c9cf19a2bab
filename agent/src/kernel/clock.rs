//! `CLOCK_MONOTONIC` in nanoseconds: the clock `bpf_ktime_get_ns()` stamps records with.

/// Nanoseconds since boot, not counting suspend, as the probe sees them.
#[must_use]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; CLOCK_MONOTONIC cannot fail on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// Milliseconds between two stamps: the judge's rule (it ages records against the clock it
/// is handed), one definition for both.
pub use lifeline_judge::age_ms;
