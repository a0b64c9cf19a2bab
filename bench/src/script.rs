//! The thread's script, done faithfully: every 3 s ask the DNS server for the API name (a
//! real query from the node's namespace to the lab's dnsmasq), and when the sorted address
//! set differs from the last one, restart the client (kill it; a new one resolves and dials).
//! It runs on the trial's own polling loop, so it needs no thread of its own.

use std::net::IpAddr;
use std::time::Duration;

use lifeline_tests::infra::api_addrs::DNS_V4;
use lifeline_tests::infra::dnsquery::lookup;
use lifeline_tests::{API_NAME, ApiLab, mono_ms};

use crate::measure::{Slot, Source};
use crate::stats::random_unit;

const EVERY_MS: u64 = 3000;

/// One script per trial: each client stands for a node of its own, whose loop runs at a
/// phase of its own (one shared phase would make the ten trials of a lab one sample).
pub(crate) struct DigScript {
    /// The answer before the fault.
    first: Option<Vec<IpAddr>>,
    /// Each trial's loop, from the first turn on.
    loops: Vec<Loop>,
}

struct Loop {
    known: Option<Vec<IpAddr>>,
    next_ms: u64,
}

impl DigScript {
    pub(crate) fn new(lab: &ApiLab) -> Self {
        Self {
            first: dig(lab),
            loops: Vec::new(),
        }
    }

    /// One turn of every trial's loop that is due. The trial's loop turns it from just
    /// after the fault on.
    pub(crate) fn tick(&mut self, lab: &ApiLab, args: &[String], slots: &mut [Slot]) {
        let now = mono_ms();
        // A real cron job or shell loop polls at a phase of its own, unrelated to when a
        // fault strikes. The trial creates the script 0.2-1.2 s before injecting the fault,
        // so a first poll one whole period after creation always landed 1.8-2.8 s after the
        // fault: a phase no real script has. So each loop's first poll falls at a uniformly
        // random point of the period counted from the first turn, i.e. from the fault
        // (counted from creation, a poll due before the fault would run late, right after it).
        if self.loops.is_empty() {
            self.loops = slots
                .iter()
                .map(|_| {
                    let phase = Duration::from_millis(EVERY_MS).mul_f64(random_unit());
                    Loop {
                        known: self.first.clone(),
                        next_ms: now + u64::try_from(phase.as_millis()).unwrap_or(EVERY_MS),
                    }
                })
                .collect();
        }
        let command: Vec<&str> = args.iter().map(String::as_str).collect();
        for (l, slot) in self.loops.iter_mut().zip(slots.iter_mut()) {
            if now < l.next_ms {
                continue;
            }
            l.next_ms = now + EVERY_MS;
            // A failed query changes nothing: the script compares answers, not errors.
            let Some(answer) = dig(lab) else { continue };
            if l.known.as_ref() == Some(&answer) {
                continue;
            }
            l.known = Some(answer);
            // The script restarts processes it started; a unit is not its to restart.
            let Source::Procs(gens) = &mut slot.source else {
                continue;
            };
            if let Some(old) = gens.last_mut() {
                old.proc.kill();
            }
            slot.restarted_ms.get_or_insert_with(mono_ms);
            match lab.kube_client(&command) {
                Ok(c) => gens.push(c),
                Err(e) => eprintln!("lab-bench: dig script: the restarted client failed: {e:#}"),
            }
        }
    }
}

/// The sorted A records, or None when the query failed.
fn dig(lab: &ApiLab) -> Option<Vec<IpAddr>> {
    let answer = lookup(lab.lab.client.name(), DNS_V4.into(), API_NAME).ok()?;
    Some(answer.addrs) // already sorted
}
