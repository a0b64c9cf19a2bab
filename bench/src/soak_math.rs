//! What the loss arithmetic (docs/ARCHITECTURE.md, "Idle connections") predicts for one
//! phase of the soak: the expected number of false verdicts, to set beside the measured ones.

use crate::soak_plan::{BURST_LOSS, Phase};

/// lifeline's defaults the arithmetic is stated in: a healthy idle socket sends one probe
/// (and gets its answer) per cycle of IDLE (1 s: `--keepalive 1s,1s,20`), so 86,400 a day.
const CYCLE_S: f64 = 1.0;
const SILENT_PROBES: i32 = 12;
const KERNEL_COUNT: i32 = 20;
const PEER_PROBE_TRIES: i32 = 11;
/// A peer probe's result stands 5 s: at most one probe per peer per 5 s.
const PEER_PROBE_EVERY_S: f64 = 5.0;
/// Transmissions of one request that must go unanswered in a row for a stall: the count rule
/// (`--stall-unanswered` 8, with linear timeouts, Linux 6.1); the time rule (6 within 10 s)
/// only decides where linear timeouts cannot be armed, which the soak's kernel can.
const STALL_TRANSMISSIONS: i32 = 8;

/// Expected counts; every one an upper bound (independent random loss, no other trouble).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Expect {
    pub silent: f64,
    pub kernel_abort: f64,
    pub dead_peer: f64,
    pub stalled: f64,
}

/// A round trip fails when either packet is lost: q = 1 - (1-p)^2.
pub(crate) fn q(loss_pct: u8) -> f64 {
    let keep = 1.0 - f64::from(loss_pct) / 100.0;
    1.0 - keep * keep
}

/// For `idle` idle sockets and `busy` sockets sending one request a second.
#[expect(clippy::cast_precision_loss, reason = "counts of seconds and sockets")]
pub(crate) fn expect(phase: &Phase, idle: usize, busy: usize) -> Expect {
    let mut e = Expect::default();
    for loss in [phase.loss, BURST_LOSS] {
        let secs = phase.seconds_at(loss) as f64;
        if secs == 0.0 {
            continue;
        }
        let q = q(loss);
        let cycles = idle as f64 * secs / CYCLE_S;
        e.silent += cycles * q.powi(SILENT_PROBES);
        e.kernel_abort += cycles * q.powi(KERNEL_COUNT);
        e.dead_peer += secs / PEER_PROBE_EVERY_S * q.powi(PEER_PROBE_TRIES);
        e.stalled += busy as f64 * secs * q.powi(STALL_TRANSMISSIONS);
    }
    e
}

#[cfg(test)]
mod tests {
    #[test]
    fn five_percent_is_quiet_and_thirty_percent_is_not() {
        let p = crate::soak_plan::phases(30);
        let a = super::expect(&p[0], 100, 50);
        assert!(a.silent < 1e-3 && a.kernel_abort < 1e-9, "{a:?}");
        assert!(a.stalled < 0.05, "{a:?}");
        let c = super::expect(&p[2], 100, 50);
        assert!(c.silent > 1.0 && c.stalled > 10.0, "{c:?}");
        assert!((super::q(5) - 0.0975).abs() < 1e-9);
    }
}
