//! Whole-path blips: the API address black-holed both ways for a while, then back, DNS
//! unchanged (a link flap, a balancer failover, a VM paused for live migration). What an
//! operator checks after one: nothing was killed, and every client was served again on its
//! original connection no later than it is without lifeline.
//!
//! Timing is the whole story here, so it is pinned: the lab's heartbeat client (`--aligned`)
//! and the server's event streams send on whole seconds of `CLOCK_MONOTONIC`, and a blip
//! starts `PHASE_MS` after one. Every client then loses its next message 200 ms into the
//! blip, in the run without lifeline and in the run with it, so the two runs are compared
//! at the same moment of each client's retransmission schedule: the phase where linear
//! retransmission timeouts, which lifeline arms for fast stall evidence, would leave the
//! socket retransmitting ~1.2 s after the kernel's default schedule.

use std::{net::IpAddr, time::Duration};

use anyhow::{Context, Result, ensure};

use crate::infra::lab::Lab;
use crate::{Client, mono_ms};

/// How far into a one-second cycle a blip starts: the next message leaves 200 ms in.
pub const PHASE_MS: u64 = 950;

/// One blip as it happened.
#[derive(Clone, Copy, Debug)]
pub struct Blip {
    /// `CLOCK_MONOTONIC` ms when the path went away.
    pub start_ms: u64,
    pub len: Duration,
}

/// Black-holes `addr` both ways at the next whole second plus `PHASE_MS` that is at least
/// a second away, for `len`, then heals it. Blocks for the blip.
///
/// # Errors
/// When nft refuses a rule.
pub fn blip(lab: &Lab, addr: IpAddr, len: Duration) -> Result<Blip> {
    let now = mono_ms();
    let start_ms = (now / 1_000 + 2) * 1_000 + PHASE_MS;
    std::thread::sleep(Duration::from_millis(start_ms - mono_ms()));
    let fault = lab.blackhole(addr)?;
    let start_ms = mono_ms();
    std::thread::sleep(len);
    lab.heal(&fault)?;
    Ok(Blip { start_ms, len })
}

/// How long after the blip began `c` was served again: its first `ok` after the start.
///
/// # Errors
/// When none came within `timeout` of the blip's end.
pub fn served_again(c: &Client, b: &Blip, timeout: Duration) -> Result<u64> {
    let ok = c.wait_event("served again after the blip", b.len + timeout, |e| {
        e.event == "ok" && e.mono_ms > b.start_ms
    })?;
    Ok(ok.mono_ms - b.start_ms)
}

/// The client is still on the connection it started with: no error, no re-dial, and its
/// `ok` events all on `port`.
///
/// # Errors
/// When it is not.
pub fn on_original(c: &Client, port: u16) -> Result<()> {
    let events = c.events();
    let other = events.iter().find(|e| {
        matches!(e.event.as_str(), "error" | "eof" | "redialed")
            || e.event == "ok" && e.local_port.is_some_and(|p| p != port)
    });
    ensure!(
        other.is_none(),
        "not on its original connection (port {port}): {other:?}\n{}",
        c.dump()
    );
    Ok(())
}

/// The client's local port, once it reported being connected.
///
/// # Errors
/// When it never did.
pub fn port_of(c: &Client) -> Result<u16> {
    c.local_port()
        .with_context(|| format!("never connected:\n{}", c.dump()))
}
