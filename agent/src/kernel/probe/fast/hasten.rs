//! The agent's own opening of a fast phase: an endpoint's idle socket whose first keepalive
//! probe the judge found overdue at the look its schedule brings half an interval after that
//! probe (`Look::hasten`). The kernel side would open the phase only when it sends the second
//! probe, a whole interval after the first (`agent-ebpf/src/unanswered.rs`); opened here, the
//! next pass pokes the second probe half an interval sooner, with its octet, and the phase
//! runs on exactly as one the kernel opened (`agent-ebpf/src/poke.rs`).

use aya::maps::{HashMap, MapData};
use lifeline_common::{
    SockState, maps,
    poke::{Poke, worth_it},
    restore::DEFERRED_NONE,
};

use crate::{judge::Cookie, kernel::clock};

/// `BPF_NOEXIST`: a phase the kernel opened meanwhile keeps its own entry.
const NOEXIST: u64 = 1;

impl super::Probe {
    /// Open `cookie`'s fast phase now. `false`, with nothing written: no fast probes, the
    /// socket is gone, its keepalive is deferred (lifeline only observes it: the kernel side
    /// never pokes it either), its count in force ends it before the verdict's probes are in
    /// (`poke::worth_it` on the kernel side), or a phase is open already.
    pub(crate) fn fast_open_now(&mut self, cookie: Cookie) -> bool {
        let Ok(fast) = self.fast.as_ref() else {
            return false;
        };
        let limit = fast.poke_limit;
        let Some(rec) = self
            .map(maps::SOCKETS)
            .ok()
            .and_then(|m| HashMap::<&MapData, u64, SockState>::try_from(m).ok())
            .and_then(|m| m.get(&cookie.0, 0).ok())
        else {
            return false;
        };
        if rec.defer != DEFERRED_NONE || !worth_it(rec.keepalive.cnt, limit) {
            return false;
        }
        let now = clock::now().as_nanos();
        let entry = Poke {
            started_ns: now,
            last_ns: now,
            // The kernel's opening is followed by its second probe with an octet, and its
            // first poke checks that octet went out. Here the first poke sends that probe:
            // the opening counts as its octet, and the second poke checks the first's.
            base_bytes: rec.probe_bytes.wrapping_sub(1),
            pokes: 0,
            // No probe is due before the first poke, which sends the second.
            out_at_poke: 0,
        };
        let opened = self
            .map_mut(maps::POKE)
            .ok()
            .and_then(|m| HashMap::<&mut MapData, u64, Poke>::try_from(m).ok())
            .is_some_and(|mut m| m.insert(cookie.0, entry, NOEXIST).is_ok());
        if opened && let Ok(f) = self.fast.as_mut() {
            f.hastened += 1;
        }
        opened
    }
}
