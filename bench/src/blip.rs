//! The blip rows (issue 33, "a blip costs nothing"): api1, the only API address (or one of
//! two), black-holed both ways for a while, then healed, DNS unchanged: a link flap, a
//! balancer failover, a VM paused for live migration. What an operator asks after one: was
//! any connection that would have recovered by itself closed (killed by lifeline, ended by
//! the client's own timeout, restarted by the dig script), and when was each client served
//! again, counted from the blip's start.
//!
//! The blip strikes at a random moment of every client's heartbeat cycle (the trial's random
//! delay before the fault, and the clients' start-up stagger over one interval), so a row is
//! a distribution over phases, not one lucky phase. (`tests/tests/lab/blip.rs` pins the phase
//! instead, to compare two runs at the same moment of the retransmission schedule.)

use std::time::Duration;

use anyhow::Result;
use lifeline_tests::assertions::decision::Decision;
use lifeline_tests::fixtures::client::ClientEvent;
use lifeline_tests::fixtures::kube::connections;
use lifeline_tests::{Agent, ApiLab, api, mono_ms};
use serde_json::Value;

use crate::cells::BlipSpec;
use crate::measure::{BlipTrial, Slot, TrialResult};
use crate::script::DigScript;

/// The lab is watched at least this long after the heal: a finding of the agent's peer
/// probe made during the blip stands 10 s, the window in which the issue saw lifeline kill
/// connections that had recovered; a close that late still counts.
const SETTLE: Duration = Duration::from_secs(10);
/// And this long after the last client was served again: a kill of a connection just after
/// it recovered (the "last ACK 24 ms old") still counts.
const AFTER_SERVED: Duration = Duration::from_secs(2);
/// The loop's step: the dig script's turns and the end check.
const STEP: Duration = Duration::from_millis(100);

/// What the blip's loop works with besides the trials.
pub(crate) struct Watch<'a> {
    pub lab: &'a ApiLab,
    /// The clients' command line (for the dig script's restarts).
    pub args: &'a [String],
    pub script: Option<&'a mut DigScript>,
    pub agent: Option<&'a Agent>,
    pub cap: Duration,
}

/// Black-holes api1 now, heals it `spec.len` later, and watches until every client was
/// served again and the lab has settled (or the cap). Every slot's fault is the blip's start.
///
/// # Errors
/// When nft refuses a rule, or on Ctrl-C (the lab's namespaces, rules with them, go when
/// the caller drops the lab).
pub(crate) fn strike(w: Watch, spec: BlipSpec, slots: &mut [Slot]) -> Result<Vec<TrialResult>> {
    let Watch {
        lab,
        args,
        mut script,
        agent,
        cap,
    } = w;
    let fault = lab.lab.blackhole(api(1, false))?;
    let start = mono_ms();
    for s in slots.iter_mut() {
        s.fault_ms = start;
    }
    let heal_at = start + ms(spec.len);
    let deadline = start + ms(cap);
    let mut healed: Option<u64> = None;
    // Each turn sleeps at least 1 ms, so the cap in ms bounds the count as well as the time.
    for _ in 0..ms(cap) {
        crate::pool::check_interrupted()?;
        if healed.is_none() && mono_ms() >= heal_at {
            // The moment the heal began: a success from then on may be the path's return.
            healed = Some(mono_ms());
            lab.lab.heal(&fault)?;
        }
        if let Some(s) = script.as_deref_mut() {
            s.tick(lab, args, slots);
        }
        let now = mono_ms();
        if now >= deadline || healed.is_some_and(|h| settled(slots, start, h, now)) {
            break;
        }
        // Heal on time: the last step before it is shortened to land on it.
        let step = match healed {
            None => STEP.min(Duration::from_millis(heal_at.saturating_sub(now).max(1))),
            Some(_) => STEP,
        };
        std::thread::sleep(step);
    }
    let heal = healed.unwrap_or(deadline);
    let kills: Vec<Decision> = agent
        .map(Agent::decisions)
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.action == "kill" && d.outcome == "killed")
        .collect();
    Ok(slots
        .iter()
        .map(|s| TrialResult {
            detection_ms: None,
            outage_ms: None,
            blip: Some(trial(s, start, heal, cap, &kills)),
        })
        .collect())
}

/// Every client served again, `SETTLE` after the heal and `AFTER_SERVED` after the last.
fn settled(slots: &[Slot], start: u64, heal: u64, now: u64) -> bool {
    if now < heal + ms(SETTLE) {
        return false;
    }
    let served: Option<Vec<u64>> = slots
        .iter()
        .map(|s| served_again(&s.events(), start, heal))
        .collect();
    served.is_some_and(|v| v.iter().all(|&t| now >= start + t + ms(AFTER_SERVED)))
}

/// One client's numbers. `kills`: the agent's carried-out kills in this lab.
fn trial(s: &Slot, start: u64, heal: u64, cap: Duration, kills: &[Decision]) -> BlipTrial {
    let events = s.events();
    let conns = connections(&events);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let mine = |d: &&Decision| conns.iter().any(|c| d.is_for_port(c.local_port));
    BlipTrial {
        served_again_ms: served_again(&events, start, heal).filter(|&t| t <= ms(cap)),
        redials: count(conns.iter().filter(|c| c.mono_ms > start).count()),
        kills: count(kills.iter().filter(mine).count()),
        own_closes: count(
            events
                .iter()
                .filter(|e| e.mono_ms > start && own_close(e))
                .count(),
        ),
        restarts: count(s.restarts()),
    }
}

/// The blip's start to the first success after it, in ms: on the original connection only
/// once the heal began (nothing crosses a black hole; an answer stamped in the instant the
/// rule went in was already on its way), on a connection made since at any time (a client
/// moved to the live address of two).
fn served_again(events: &[ClientEvent], start: u64, heal: u64) -> Option<u64> {
    let new: Vec<u16> = connections(events)
        .iter()
        .filter(|c| c.mono_ms > start)
        .map(|c| c.local_port)
        .collect();
    events
        .iter()
        .find(|e| {
            e.event == "ok"
                && e.mono_ms > start
                && (e.mono_ms >= heal || e.local_port.is_some_and(|p| new.contains(&p)))
        })
        .map(|e| e.mono_ms - start)
}

/// A session the client ended itself (or its kernel, on its own `TCP_USER_TIMEOUT`): every
/// failure of a live connection but lifeline's `ECONNABORTED`; failed dials are not closes.
fn own_close(e: &ClientEvent) -> bool {
    let op = e.raw.get("op").and_then(Value::as_str);
    match e.event.as_str() {
        "eof" => true,
        "error" => {
            !matches!(op, Some("connect" | "resolve")) && e.errno != Some(libc::ECONNABORTED)
        }
        _ => false,
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "blip_tests.rs"]
mod tests;
