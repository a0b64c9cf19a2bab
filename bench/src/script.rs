//! The thread's script, done faithfully: every 3 s ask the DNS server for the API name (a
//! real query from the node's namespace to the lab's dnsmasq), and when the sorted address
//! set differs from the last one, restart the client (kill it; a new one resolves and dials).
//! It runs on the trial's own polling loop, so it needs no thread of its own.

use std::net::IpAddr;
use std::time::Duration;

use lifeline_tests::api_addrs::DNS_V4;
use lifeline_tests::dnsquery::lookup;
use lifeline_tests::{API_NAME, ApiLab, mono_ms};

use crate::measure::{Slot, Source};

const EVERY_MS: u64 = 3000;

pub struct DigScript {
    known: Option<Vec<IpAddr>>,
    next_ms: u64,
}

impl DigScript {
    pub fn new(lab: &ApiLab) -> Self {
        // A real cron job or shell loop polls at a phase of its own, unrelated to when a
        // fault strikes. The trial creates the script 0.2-1.2 s before injecting the fault,
        // so a first poll one whole period after creation always landed 1.8-2.8 s after the
        // fault: a phase no real script has. The first poll falls at a uniformly random
        // point of the period instead.
        let phase = Duration::from_millis(EVERY_MS).mul_f64(crate::stats::random_unit());
        Self {
            known: dig(lab),
            next_ms: mono_ms() + u64::try_from(phase.as_millis()).unwrap_or(EVERY_MS),
        }
    }

    /// One turn of the script's loop when it is due.
    pub fn tick(&mut self, lab: &ApiLab, args: &[String], slots: &mut [Slot]) {
        let now = mono_ms();
        if now < self.next_ms {
            return;
        }
        self.next_ms = now + EVERY_MS;
        // A failed query changes nothing: the script compares answers, not errors.
        let Some(now_set) = dig(lab) else { return };
        if self.known.as_ref() == Some(&now_set) {
            return;
        }
        self.known = Some(now_set);
        let command: Vec<&str> = args.iter().map(String::as_str).collect();
        for slot in slots {
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
