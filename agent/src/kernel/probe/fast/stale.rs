//! What a killed agent left on the devices of its network namespace (SIGKILL, an OOM kill at
//! the unit's `MemoryMax`, a watchdog abort): before Linux 6.6 its clsact filters outlive it,
//! with the program and its maps (about 14 MB), and every restart would add one more. At
//! start, before attaching, the agent removes every egress filter named after its program
//! from every device (`aya::programs::tc::qdisc_detach_program`, by `TCA_BPF_NAME`). A tcx
//! link closes with its process, so from 6.6 there is nothing to remove.
//!
//! A clsact qdisc that held nothing but such filters is treated as lifeline's own (which
//! agent added it cannot be known; a qdisc without filters does nothing): it goes when
//! lifeline no longer needs it (`attach.rs`).

use aya::programs::{TcAttachType, tc};
use lifeline_common::hooks::Hook;

use super::devices;
use crate::kernel::tc as nl;

/// What the removal found.
#[derive(Debug, Default)]
pub(super) struct Stale {
    /// Devices and how many of lifeline's filters were removed from each.
    pub removed: Vec<(String, usize)>,
    /// Devices (name, index) whose clsact qdisc holds no filter now.
    pub emptied: Vec<(String, u32)>,
    /// Devices that could not be looked at, with why.
    pub failed: Vec<(String, String)>,
}

/// Remove lifeline's filters from every device of this network namespace.
#[must_use]
pub(super) fn remove() -> Stale {
    let name = Hook::ProbeByte.program();
    let mut out = Stale::default();
    let mut names: Vec<String> = devices::tx_packets().into_keys().collect();
    names.sort_unstable();
    for dev in names {
        let Some(index) = index_of(&dev) else {
            continue;
        };
        let mine = match nl::filters(index, nl::EGRESS) {
            Ok(f) => f.iter().filter(|f| f.name.as_deref() == Some(name)).count(),
            Err(e) => {
                out.failed.push((dev, e.to_string()));
                continue;
            }
        };
        if mine == 0 {
            continue;
        }
        if let Err(e) = tc::qdisc_detach_program(&dev, TcAttachType::Egress, name) {
            out.failed.push((dev, e.to_string()));
            continue;
        }
        if nl::clsact_unused(index).unwrap_or(false) {
            out.emptied.push((dev.clone(), index));
        }
        out.removed.push((dev, mine));
    }
    out
}

/// Any device's index (not only Ethernet: a filter may have been left anywhere).
fn index_of(dev: &str) -> Option<u32> {
    let c = std::ffi::CString::new(dev).ok()?;
    // SAFETY: a NUL-terminated name; the call only reads it.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

impl crate::kernel::probe::Probe {
    /// At start, before any attach: remove what killed agents left (`remove`), say so, and
    /// take an emptied clsact qdisc as lifeline's own (removed now when fast probes are
    /// off or unavailable here, else when lifeline's filter on that device goes).
    /// `remove_stale_tc`, for `lifeline run` right after loading (before the tc program
    /// attaches anywhere; never for `check`, beside a running agent's filter).
    #[must_use]
    pub(crate) fn without_stale_tc(mut self) -> Self {
        self.remove_stale_tc();
        self
    }

    pub(crate) fn remove_stale_tc(&mut self) {
        if super::attach::tcx() {
            return;
        }
        let found = remove();
        for (device, filters) in &found.removed {
            tracing::warn!(device = %device, filters, "removed the tc filters a killed lifeline left (with their programs and maps)");
        }
        for (device, why) in &found.failed {
            tracing::info!(device = %device, error = %why, "cannot look for tc filters a killed lifeline left on this device");
        }
        for (device, index) in found.emptied {
            match self.fast.as_mut() {
                Ok(f) => {
                    f.adopt.insert(device);
                }
                Err(_) => super::attach::remove_unused_clsact(&device, index),
            }
        }
    }
}
