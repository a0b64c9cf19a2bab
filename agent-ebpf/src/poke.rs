//! The TCP iterator's half of fast keepalive probes (`lifeline_common::poke`): for a socket
//! in a fast phase whose last probe is still unanswered an interval later, re-set
//! `TCP_KEEPIDLE` to the value in force. `tcp_sock_set_keepidle_locked()`
//! (<https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp.c>) re-arms the keepalive
//! timer for what is left of the idle time, which a socket silent for seconds has used up:
//! the timer fires at once and `tcp_keepalive_timer()` sends the next probe and counts it in
//! `icsk_probes_out`, exactly as at its own cadence (and aborts at `TCP_KEEPCNT` as always).
//!
//! A poke happens only when all of these hold, else the phase closes:
//! - the last probe is unanswered (`icsk_probes_out` > 0: `tcp_ack()` zeroes it on any ACK);
//! - at least `--fast-probes` and two smoothed round trips since the last poke (less a
//!   quarter: the agent's passes set the cadence), so a live peer's answer has had its time;
//! - the last poke sent a probe (`icsk_probes_out` rose since): none is sent while data is
//!   in flight, whose retransmissions are then the evidence;
//! - every probe since the phase opened carried its octet (the tc program counted it in
//!   `probe_bytes`): a zero-length probe, which a live peer answers at most every 500 ms,
//!   is never sent faster than the kernel's own cadence;
//! - fewer unanswered than `POKE_LIMIT` (the verdict's evidence is in) and than the socket's
//!   `TCP_KEEPCNT` less one (the kernel's own abort is never brought forward);
//! - the phase is younger than `BOUND_NS`;
//! - the socket's keepalive is not deferred (`crate::restore`), and its count in force lets the
//!   silent verdict's probes be sent before the kernel aborts it.

use core::ffi::c_void;

use aya_ebpf::{Global, helpers::bpf_ktime_get_ns};
use lifeline_common::{
    config::stats,
    keepalive::{SOL_TCP, TCP_KEEPIDLE},
    poke::BOUND_NS,
};

use crate::{
    keepalive,
    maps::{POKE, SOCKETS, count},
    unanswered::{FAST_INTERVAL_NS, probes_out},
};

/// `lifeline_common::globals::POKE_LIMIT`.
#[unsafe(no_mangle)]
static POKE_LIMIT: Global<u32> = Global::new(0);

/// Whether fast probes can serve the silent verdict on a socket whose count in force is
/// `cnt`: only when the kernel does not abort it before `--silent-probes` are unanswered
/// (`POKE_LIMIT` is that + 2).
pub(crate) fn worth_it(cnt: u32) -> bool {
    lifeline_common::poke::worth_it(cnt, POKE_LIMIT.load())
}

/// For the TCP iterator, on every socket it visits.
pub(crate) fn visit(sk: *mut c_void, cookie: u64) {
    if poke(sk, cookie).is_none() {
        let _ = POKE.remove(cookie);
    }
}

/// `None`: the phase is over (the caller closes it); `Some`: poked, or not yet due.
fn poke(sk: *mut c_void, cookie: u64) -> Option<()> {
    // Nearly every socket the iterator visits has no entry: one lookup, and out.
    let entry = POKE.get_ptr_mut(cookie);
    // SAFETY: a map value of the right type; the iterator holds the socket's lock.
    let p = unsafe { &mut *entry? };
    // SAFETY: as above.
    let rec = unsafe { &*SOCKETS.get_ptr(cookie)? };
    // Deferred to the application's own deadline while lifeline only observes: its timing is
    // the deferral's (`crate::restore`), never a poke's.
    if rec.defer != 0 || !worth_it(rec.keepalive.cnt) {
        return None;
    }
    // SAFETY: a helper without arguments.
    let now = unsafe { bpf_ktime_get_ns() };
    if now.wrapping_sub(p.started_ns) > BOUND_NS {
        return None;
    }
    let srtt_ns = u64::from(rec.probe_srtt_us) * 1000;
    // Due at three quarters of the interval: the agent's passes set the cadence, and a
    // poke late in one pass must not make the next pass skip it.
    let interval = FAST_INTERVAL_NS.load().max(srtt_ns * 2);
    if now.wrapping_sub(p.last_ns) < interval - interval / 4 {
        return Some(());
    }
    let out = u32::from(probes_out(sk.cast_const().cast())?);
    let limit = POKE_LIMIT.load().min(rec.keepalive.cnt.saturating_sub(1));
    if out == 0 || out >= limit {
        return None;
    }
    // The last poke (or the opening, which stands for the kernel's second probe) sent no
    // probe: `tcp_keepalive_timer()` sends none while data is in flight or queued
    // (`tp->packets_out || !tcp_write_queue_empty(sk)`, it only re-arms), so the application
    // wrote since (<https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_timer.c>).
    // Its retransmissions are the socket's evidence now; no octet is missing, and poking a
    // timer that cannot probe only costs.
    if out <= u32::from(p.out_at_poke) {
        count(stats::FAST_BUSY);
        return None;
    }
    if rec.probe_bytes.wrapping_sub(p.base_bytes) <= u32::from(p.pokes) {
        count(stats::FAST_NO_OCTET);
        return None;
    }
    let idle = i32::try_from(rec.keepalive.idle_s).ok()?;
    keepalive::set(sk, SOL_TCP, TCP_KEEPIDLE, idle).ok()?;
    p.pokes += 1;
    // `out` is below `limit`, a `u32` from a `u8`: it fits.
    p.out_at_poke = u16::try_from(out).unwrap_or(u16::MAX);
    p.last_ns = now;
    count(stats::FAST_POKES);
    Some(())
}
