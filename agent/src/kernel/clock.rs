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

/// Milliseconds between two stamps (0 when `then` is in the future or unset).
#[must_use]
pub fn age_ms(now_ns: u64, then_ns: u64) -> u64 {
    if then_ns == 0 {
        0
    } else {
        now_ns.saturating_sub(then_ns) / 1_000_000
    }
}
