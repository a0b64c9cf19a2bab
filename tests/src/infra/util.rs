//! Small shared helpers: root check, the common clock, unique names, bounded waiting.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The lab needs root (namespaces, nft, cgroups, eBPF). Not being root is a failure, not a
/// skip: `cargo xtask test` runs these tests as root, and a silent skip would hide that the
/// scenarios never ran.
///
/// # Panics
/// When the effective uid is not 0.
#[track_caller]
pub fn require_root() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    assert!(
        is_root(),
        "the lifeline lab tests must run as root (euid is {euid}); run them with `cargo xtask test`"
    );
}

/// Whether the effective uid is 0.
#[must_use]
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Sleeps until `CLOCK_MONOTONIC` next reaches a whole multiple of `period` (ms): fixtures
/// that send on such boundaries share one phase across processes and namespaces, so a test
/// can start a fault at a known moment of every client's cycle.
pub fn sleep_to_boundary(period: Duration) {
    let p = u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1);
    let now = mono_ms();
    std::thread::sleep(Duration::from_millis(p - now % p));
}

/// `CLOCK_MONOTONIC` in milliseconds. The fixtures print the same clock, so the times seen
/// by the test, the client and the agent's log receipt can be compared directly.
#[must_use]
pub fn mono_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1000
        + u64::try_from(ts.tv_nsec).unwrap_or(0) / 1_000_000
}

/// A short name unique on this machine while this process lives: `ll-<pid>-<n><suffix>`.
/// Short because interface and namespace names end up in error messages and `ip` output.
#[must_use]
pub fn unique_name(suffix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("ll-{}-{n}{suffix}", std::process::id())
}

/// Parses `500ms`, `4s`, `2m` or a plain number of seconds.
///
/// # Errors
/// When the text is not such a duration.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, ""), |i| s.split_at(i));
    let n: u64 = num.parse().with_context(|| format!("bad duration {s:?}"))?;
    Ok(match unit {
        "" | "s" => Duration::from_secs(n),
        "ms" => Duration::from_millis(n),
        "m" => Duration::from_secs(n * 60),
        _ => bail!("bad duration unit in {s:?} (use ms, s or m)"),
    })
}

/// Polls `probe` every `every` until it yields `Some`, at most until `timeout`: every wait
/// in the lab is bounded in time and in the number of rounds.
///
/// # Errors
/// When `probe` fails or the time runs out (the error names `what`).
pub fn wait_until<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let start = Instant::now();
    let max_rounds = timeout.as_millis() / every.as_millis().max(1) + 2;
    for _ in 0..max_rounds {
        if let Some(v) = probe()? {
            return Ok(v);
        }
        if start.elapsed() >= timeout {
            break;
        }
        std::thread::sleep(every);
    }
    bail!("timed out after {timeout:?} waiting for {what}")
}

/// A private directory under /tmp, removed with its contents on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// # Errors
    /// When the directory cannot be created.
    pub fn new() -> Result<Self> {
        let path = std::env::temp_dir().join(unique_name(""));
        std::fs::create_dir(&path).with_context(|| format!("mkdir {}", path.display()))?;
        Ok(Self(path))
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
