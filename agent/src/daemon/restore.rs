//! A clean stop puts back what lifeline changed on the sockets it armed (the TCP iterator's
//! restore pass, `kernel/probe/restore.rs`) and says in one line how many sockets are as their
//! application made them again and how many are not, and why.

use std::fmt::Write as _;

use lifeline_common::restore::opt;

use super::Daemon;
use crate::kernel::probe::RestoreSummary;

impl Daemon {
    /// The restore pass, its one log line, and the crash-recovery pin removed.
    pub(crate) fn restore(&mut self) {
        match self.kernel.restore() {
            Ok(r) => log(&r),
            Err((e, left)) => {
                tracing::warn!(event = "restored", restored = 0, not_restored = left, error = %format!("{e:#}"),
                    "socket options restored on 0 sockets, {left} could not be: {e:#}; they keep what lifeline set (SO_KEEPALIVE on, its keepalive timing, callback flags)");
            }
        }
    }
}

fn log(r: &RestoreSummary) {
    let why: Vec<String> = r
        .left
        .iter()
        .map(|(bit, n)| format!("{n} kept {}", left_text(*bit)))
        .collect();
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({})", why.join("; "))
    };
    let mut kept = String::new();
    if r.callbacks_kept > 0 {
        let _ = write!(
            kept,
            "; {} keep lifeline's sock_ops callback flags (clearing them needs Linux 6.12; no application sees them, and they call nothing once lifeline's programs are detached)",
            r.callbacks_kept
        );
    }
    if r.clamped > 0 {
        let _ = write!(
            kept,
            "; {} keep the snd_ssthresh lifeline set at an RTO under BBR (TCP_BPF_SNDCWND_CLAMP can be neither read nor set back; it clamps nothing)",
            r.clamped
        );
    }
    tracing::info!(
        event = "restored",
        restored = r.restored,
        not_restored = r.not_restored,
        gone = r.gone,
        clamped = r.clamped,
        callbacks_kept = r.callbacks_kept,
        "socket options restored on {} sockets, {} could not be{why}{kept}",
        r.restored,
        r.not_restored
    );
}

/// What a socket kept, by option bit, and why.
fn left_text(bit: u32) -> &'static str {
    match bit {
        opt::CNT => {
            "TCP_KEEPCNT raised past its probes still unanswered (the application's own count would abort it at once)"
        }
        opt::KEEPALIVE | opt::IDLE | opt::INTVL | opt::USER_TIMEOUT | opt::LINEAR => {
            "an option whose original value was never known (set before connecting, on a kernel that cannot read it back: Linux 6.1) or that the kernel refused"
        }
        _ => "an option lifeline changed",
    }
}
