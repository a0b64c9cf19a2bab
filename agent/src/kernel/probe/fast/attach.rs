//! Attaching the tc program to one device, where no program that ends the chain can come
//! before it when it attaches (docs/ARCHITECTURE.md, "Fast probes"), and everything it
//! added going again when it detaches:
//! - tcx (Linux 6.6): a link first in the device's egress chain (`BPF_F_BEFORE` without an
//!   anchor, `bpf_mprog_attach()` in
//!   <https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/mprog.c>); it closes with the
//!   agent, even a killed one;
//! - before: a `cls_bpf` filter on the clsact egress at a priority and handle of its own
//!   (`place.rs`), on the clsact qdisc, which lifeline adds when the device has none and
//!   removes again when its filter goes and nothing else hangs there.

use aya::{
    Ebpf,
    programs::{
        LinkOrder, SchedClassifier, TcAttachType,
        tc::{self, NlOptions, SchedClassifierLink, TcAttachOptions, TcHandle},
    },
    util::KernelVersion,
};
use lifeline_common::hooks::Hook;

use super::{place, reach::Meter, status::Chain};
use crate::kernel::{errors::explain_program, probe::attach::program, tc as nl};

/// The program on one device. Dropping it detaches it and removes a clsact qdisc of
/// lifeline's that nothing else uses.
pub(super) struct Attachment {
    pub device: String,
    pub index: u32,
    pub chain: Chain,
    pub meter: Meter,
    link: Option<SchedClassifierLink>,
    /// The device's clsact qdisc is lifeline's: it added it, or it held nothing but a killed
    /// agent's stale filter (`stale.rs`).
    own_qdisc: bool,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        // An owned link detaches when dropped: the tcx link closes, the filter is deleted.
        drop(self.link.take());
        if self.own_qdisc {
            remove_unused_clsact(&self.device, self.index);
        }
    }
}

/// Whether this kernel has tcx (6.6); before it, netlink's clsact.
#[must_use]
pub(super) fn tcx() -> bool {
    KernelVersion::current().is_ok_and(|v| v >= KernelVersion::new(6, 6, 0))
}

/// Remove the device's clsact qdisc if no filter hangs on it (lifeline's went first).
pub(super) fn remove_unused_clsact(device: &str, index: u32) {
    match nl::clsact_unused(index) {
        Ok(true) => match nl::remove_clsact(index) {
            Ok(()) => tracing::info!(device, "removed the clsact qdisc lifeline added"),
            Err(e) => {
                tracing::warn!(device, error = %e, "cannot remove the clsact qdisc lifeline added");
            }
        },
        Ok(false) => tracing::info!(
            device,
            "the clsact qdisc lifeline added holds other filters now: left in place"
        ),
        Err(e) => {
            tracing::warn!(device, error = %e, "cannot list the clsact qdisc's filters: left in place");
        }
    }
}

/// Attach the program to `device` (index `index`); `adopt`: its clsact qdisc, if there is
/// one, is lifeline's (`stale.rs`).
pub(super) fn attach(
    ebpf: &mut Ebpf,
    device: &str,
    index: u32,
    adopt: bool,
) -> Result<Attachment, String> {
    let hook = Hook::ProbeByte;
    let prog: &mut SchedClassifier = program(ebpf, hook).map_err(|e| format!("{e:#}"))?;
    let explain = |e: aya::programs::ProgramError| format!("{:#}", explain_program(hook, &e));
    let mut a = Attachment {
        device: device.to_owned(),
        index,
        chain: Chain::Tcx,
        meter: Meter::default(),
        link: None,
        own_qdisc: false,
    };
    let options = if tcx() {
        TcAttachOptions::TcxOrder(LinkOrder::first())
    } else {
        a.own_qdisc = match tc::qdisc_add_clsact(device) {
            Ok(()) => true,
            // aya 0.14 reports an existing qdisc as the kernel's EEXIST ("Exclusivity flag
            // on"), not as `AlreadyAttached`: a CNI's clsact is there already.
            Err(tc::TcError::AlreadyAttached) => adopt,
            Err(tc::TcError::NetlinkError(e)) if e.raw_os_error() == Some(libc::EEXIST) => adopt,
            Err(e) => return Err(format!("adding the clsact qdisc: {e}")),
        };
        // From here a failure drops `a`, which removes a qdisc lifeline just added.
        let existing = nl::filters(index, nl::EGRESS)
            .map_err(|e| format!("listing the device's egress filters: {e}"))?;
        let slot = place::choose(&existing);
        a.chain = Chain::Clsact {
            priority: slot.priority,
            handle: slot.handle,
        };
        TcAttachOptions::Netlink(NlOptions {
            priority: slot.priority,
            handle: TcHandle::from(slot.handle),
            classid: None,
        })
    };
    let id = prog
        .attach_with_options(device, TcAttachType::Egress, options)
        .map_err(explain)?;
    a.link = Some(prog.take_link(id).map_err(explain)?);
    Ok(a)
}

impl super::FastProbes {
    /// Attach to `dev` unless the program is there already (at the device's current index)
    /// or it was refused; Ethernet devices only.
    pub(super) fn attach(&mut self, ebpf: &mut Ebpf, dev: &str) {
        let Some(index) = super::devices::ethernet_index(dev) else {
            return;
        };
        if self.attached.get(dev).is_some_and(|a| a.index == index)
            || self.refused.contains_key(dev)
        {
            return;
        }
        // A re-created device: the old attachment went with it.
        self.attached.remove(dev);
        match attach(ebpf, dev, index, self.adopt.remove(dev)) {
            Ok(a) => {
                tracing::info!(device = %dev, chain = %a.chain, "fast keepalive probes on this device");
                self.attached.insert(dev.to_owned(), a);
            }
            Err(why) => {
                tracing::warn!(device = %dev, error = %why, "fast keepalive probes cannot use this device: its sockets' probes stay at the kernel's cadence");
                self.refused.insert(dev.to_owned(), why);
            }
        }
    }
}
