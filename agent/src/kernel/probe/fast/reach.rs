//! Whether the tc program's packets really go out on a device: a program ahead of it in the
//! chain that ends the chain (`TC_ACT_OK` as Cilium's do, a redirect, a drop) hides it, and
//! then no keepalive probe gets its octet. Two measurements, both nearly free:
//! - the program counts every packet it sees leaving the device (`maps::TC_SEEN`); a device
//!   whose transmit counter moves while that count does not is sending around it;
//! - a fast phase that ended because a probe left without its octet
//!   (`stats::FAST_NO_OCTET`, `agent-ebpf/src/poke.rs`) is the same news from one socket.
//!
//! Packets the device sends without passing tc egress (`PACKET_QDISC_BYPASS` sockets, XDP
//! transmits) move its counter too, so silence is "hidden" only after `MIN_SENT` packets
//! over `MIN_SPAN`, or beside a probe that went without its octet. A single packet seen is
//! proof it runs. The rule is `rule`; the agent applies it every `EVERY`.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How often the counts are read.
pub(super) const EVERY: Duration = Duration::from_millis(500);
/// Packets the device must send, none seen, before the program is called hidden.
pub(super) const MIN_SENT: u64 = 8;
/// Over at least this long (an idle watched socket alone sends a probe a second).
pub(super) const MIN_SPAN: Duration = Duration::from_secs(3);

/// What is known of a device's program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Reach {
    /// Not yet enough traffic to tell (or its counter is shared with another device's).
    #[default]
    Unmeasured,
    /// It saw the device's packets: its octets go out.
    Out,
    /// The device sent packets it never saw: another program ahead of it ends the chain.
    Hidden,
}

/// Counters at one moment: packets the program saw, packets the device sent, fast phases
/// ended without an octet (all devices).
#[derive(Clone, Copy, Debug)]
pub(super) struct Sample {
    pub at: Instant,
    pub seen: u64,
    pub sent: u64,
    pub no_octet: u64,
}

/// What a window of counts says; `None`: nothing yet (too little traffic).
#[must_use]
pub(super) fn rule(seen: u64, sent: u64, span: Duration, no_octet: u64) -> Option<Reach> {
    if seen > 0 {
        Some(Reach::Out)
    } else if (sent >= MIN_SENT && span >= MIN_SPAN) || (no_octet > 0 && sent >= 2) {
        Some(Reach::Hidden)
    } else {
        None
    }
}

/// One device's measurement: the window since the last conclusion, and that conclusion.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Meter {
    base: Option<Sample>,
    pub reach: Reach,
    /// The packets seen and sent of the window that gave `reach`.
    pub window: (u64, u64),
}

impl Meter {
    /// Take a sample; returns the new `reach` when it changed. A counter that went back (a
    /// re-created device, a reloaded program) starts a new window.
    pub(super) fn update(&mut self, now: Sample) -> Option<Reach> {
        let Some(base) = self.base else {
            self.base = Some(now);
            return None;
        };
        if now.seen < base.seen || now.sent < base.sent || now.no_octet < base.no_octet {
            self.base = Some(now);
            return None;
        }
        let (seen, sent) = (now.seen - base.seen, now.sent - base.sent);
        let found = rule(
            seen,
            sent,
            now.at.saturating_duration_since(base.at),
            now.no_octet - base.no_octet,
        )?;
        self.base = Some(now);
        self.window = (seen, sent);
        let was = std::mem::replace(&mut self.reach, found);
        (was != found).then_some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_packet_seen_is_proof_and_silence_needs_traffic_time_or_a_probe_without_octet() {
        let s = Duration::from_secs;
        assert_eq!(rule(1, 500, s(10), 3), Some(Reach::Out));
        assert_eq!(rule(0, 8, s(3), 0), Some(Reach::Hidden));
        assert_eq!(rule(0, 7, s(30), 0), None, "too few packets");
        assert_eq!(rule(0, 500, s(2), 0), None, "too short");
        assert_eq!(
            rule(0, 2, Duration::from_millis(500), 1),
            Some(Reach::Hidden),
            "a probe left without its octet and the program saw nothing"
        );
        assert_eq!(rule(0, 1, s(1), 1), None);
    }

    #[test]
    fn the_window_grows_until_it_tells_then_starts_again() {
        let t0 = Instant::now();
        let at = |ms: u64, seen: u64, sent: u64| Sample {
            at: t0 + Duration::from_millis(ms),
            seen,
            sent,
            no_octet: 0,
        };
        let mut m = Meter::default();
        assert_eq!(
            m.update(at(0, 100, 100)),
            None,
            "the first sample is the base"
        );
        assert_eq!(m.update(at(500, 110, 112)), Some(Reach::Out));
        assert_eq!(m.window, (10, 12));
        // Hidden from here: the device sends, the program sees nothing.
        assert_eq!(m.update(at(1000, 110, 115)), None);
        assert_eq!(m.update(at(2000, 110, 118)), None, "8 packets, 1.5 s");
        assert_eq!(m.update(at(3600, 110, 121)), Some(Reach::Hidden));
        assert_eq!(m.window, (0, 9));
        assert_eq!(
            m.update(at(4000, 110, 130)),
            None,
            "no change, a new window"
        );
        assert_eq!(m.update(at(4500, 111, 131)), Some(Reach::Out), "seen again");
        // A re-created device's counters start over: a new window, no verdict.
        assert_eq!(m.update(at(5000, 0, 3)), None);
        assert_eq!(m.reach, Reach::Out);
    }
}
