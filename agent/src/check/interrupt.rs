//! SIGINT, SIGTERM and SIGHUP held off while `lifeline check` has something on the node
//! that would outlive it: before Linux 6.6 the tc program is a clsact filter (and maybe a
//! clsact qdisc the check added), which a killed process leaves behind. While a `SignalsDeferred`
//! lives, such a signal is only noted; when it drops, after the check removed what it
//! attached, the old handling is restored and the signal raised again, so the check ends
//! the way it would have (killed by that signal), a moment later.

use std::sync::atomic::{AtomicI32, Ordering};

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The signal that arrived while deferred (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn note(sig: libc::c_int) {
    // Async-signal-safe: one atomic store.
    PENDING.store(sig, Ordering::SeqCst);
}

/// Whether one of the signals came while deferred (the caller may cut its wait short).
#[must_use]
pub(super) fn pending() -> bool {
    PENDING.load(Ordering::SeqCst) != 0
}

/// While alive, the signals above are noted instead of handled.
pub(super) struct SignalsDeferred {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalsDeferred {
    #[must_use]
    pub(super) fn new() -> Self {
        let mut old = Vec::new();
        for sig in SIGNALS {
            // SAFETY: plain C structs, all zeroes valid; `note` is async-signal-safe and
            // lives for the whole program; `prev` is filled by the kernel.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = note as extern "C" fn(libc::c_int) as libc::sighandler_t;
                libc::sigemptyset(&raw mut act.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &raw const act, &raw mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        Self { old }
    }
}

impl Default for SignalsDeferred {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for SignalsDeferred {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores the disposition saved in `new`.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
        let sig = PENDING.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // SAFETY: re-raise under the restored handling (by default: the process ends).
            unsafe { libc::raise(sig) };
        }
    }
}
