//! The judge's two plain identities: a moment (`Mono`, on the clock the probe stamps its
//! records with) and a socket (`Cookie`, the kernel's own name for it).

use std::{
    fmt,
    ops::{Add, Sub},
    time::Duration,
};

/// A moment on `CLOCK_MONOTONIC`, in nanoseconds since boot (suspend not counted): the clock
/// `bpf_ktime_get_ns()` stamps the probe's records with, so a record's times and the sweep's
/// clock compare directly. The one time type of the rules: the loop reads the clock once and
/// hands the moment in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mono(u64);

impl Mono {
    /// Boot; in a record, "never stamped".
    pub const ZERO: Self = Self(0);
    /// Later than any moment a machine reaches.
    pub const MAX: Self = Self(u64::MAX);

    #[must_use]
    pub const fn from_nanos(ns: u64) -> Self {
        Self(ns)
    }

    #[must_use]
    pub const fn from_secs(s: u64) -> Self {
        Self(s.saturating_mul(1_000_000_000))
    }

    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// How long after `earlier` this is; zero when it is not after it.
    #[must_use]
    pub const fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `d` before this, unless that is before boot.
    #[must_use]
    pub fn checked_sub(self, d: Duration) -> Option<Self> {
        self.0.checked_sub(nanos(d)).map(Self)
    }

    /// Milliseconds since `then`, 0 when `then` is unset (`ZERO`) or later: how a record's
    /// stamps are aged against the sweep's moment.
    #[must_use]
    pub const fn ms_since(self, then: Self) -> u64 {
        if then.0 == 0 {
            0
        } else {
            self.0.saturating_sub(then.0) / 1_000_000
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Mono {
    type Output = Self;

    /// Saturating: a moment past the end of time is the end of time.
    fn add(self, d: Duration) -> Self {
        Self(self.0.saturating_add(nanos(d)))
    }
}

impl Sub<Duration> for Mono {
    type Output = Self;

    /// Saturating at boot.
    fn sub(self, d: Duration) -> Self {
        Self(self.0.saturating_sub(nanos(d)))
    }
}

impl Sub for Mono {
    type Output = Duration;

    /// Saturating at zero, as `Instant`'s.
    fn sub(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// A socket's cookie: the kernel's unique, never reused name for it
/// (`sock_gen_cookie()`, <https://github.com/torvalds/linux/blob/v6.18/net/core/sock_diag.c>),
/// the key of every per-socket map, and the order kills are carried out in within a sweep
/// (the kernel hands cookies out in increasing order, so older sockets come first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cookie(pub u64);

impl fmt::Display for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_saturate_and_unset_stamps_age_to_zero() {
        let t = Mono::from_secs(100);
        assert_eq!(t + Duration::from_secs(1), Mono::from_secs(101));
        assert_eq!(t - Duration::from_secs(200), Mono::ZERO);
        assert_eq!(t.checked_sub(Duration::from_secs(200)), None);
        assert_eq!(Mono::from_secs(99) - t, Duration::ZERO);
        assert_eq!(t.ms_since(Mono::from_secs(98)), 2_000);
        assert_eq!(t.ms_since(Mono::ZERO), 0, "never stamped");
        assert_eq!(Mono::MAX + Duration::from_secs(1), Mono::MAX);
    }
}
