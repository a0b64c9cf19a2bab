//! Reading whether the tc program's octets go out on each device (`reach.rs`): its per-device
//! count of packets seen (`maps::TC_SEEN`), the device's transmit counter, and the fast
//! phases that ended for want of an octet (`stats::FAST_NO_OCTET`).

use std::{collections::HashMap, time::Instant};

use aya::maps::{MapData, PerCpuArray};
use lifeline_common::{config::stats, maps, tc};

use super::{
    FastProbes,
    devices::tx_packets,
    reach::{Reach, Sample},
    status::{Chain, FastDevice, FastState, FastStatus, Refused},
};
use crate::kernel::{probe::Probe, tc as nl};

impl Probe {
    /// Take one sample of every device's counts and update what they say; a change is
    /// logged (hidden: a warning naming the device).
    pub(crate) fn fast_measure(&mut self) {
        let Ok(fast) = self.fast.as_mut() else {
            return;
        };
        let now = Instant::now();
        fast.last_measure = Some(now);
        let Some(map) = self
            .ebpf
            .map(maps::TC_SEEN)
            .and_then(|m| PerCpuArray::<&MapData, u64>::try_from(m).ok())
        else {
            return;
        };
        let no_octet = self
            .ebpf
            .map(maps::STATS)
            .and_then(|m| PerCpuArray::<&MapData, u64>::try_from(m).ok())
            .and_then(|m| m.get(&stats::FAST_NO_OCTET, 0).ok())
            .map_or(0, |v| v.iter().sum());
        let sent = tx_packets();
        // Devices whose indexes share a counter slot cannot be told apart: not measured.
        let mut slots: HashMap<u32, usize> = HashMap::new();
        for a in fast.attached.values() {
            *slots.entry(tc::slot(a.index)).or_default() += 1;
        }
        let mut gone = Vec::new();
        for a in fast.attached.values_mut() {
            let slot = tc::slot(a.index);
            let (Some(sent), true) = (sent.get(&a.device), slots.get(&slot) == Some(&1)) else {
                continue;
            };
            let Ok(seen) = map.get(&slot, 0) else {
                continue;
            };
            let sample = Sample {
                at: now,
                seen: seen.iter().sum(),
                sent: *sent,
                no_octet,
            };
            match a.meter.update(sample) {
                Some(Reach::Hidden) if !filter_there(a) => gone.push(a.device.clone()),
                Some(Reach::Hidden) => tracing::warn!(
                    device = %a.device, chain = %a.chain, sent = a.meter.window.1,
                    "fast probes hidden by another program on {}: its tc program saw none of the packets the device sent (a program ahead of it ends the chain); idle sockets through it are probed at the kernel's 1 s cadence",
                    a.device
                ),
                Some(Reach::Out) => tracing::info!(
                    device = %a.device, chain = %a.chain, seen = a.meter.window.0, sent = a.meter.window.1,
                    "fast probes: the tc program sees this device's packets"
                ),
                Some(Reach::Unmeasured) | None => {}
            }
        }
        // Someone removed lifeline's filter (or the clsact qdisc with it): not hidden, gone.
        // It is attached again at the next look at the routes.
        for dev in gone {
            tracing::warn!(device = %dev, "lifeline's tc filter on this device was removed by someone else: attaching it again");
            fast.attached.remove(&dev);
            fast.last_scan = None;
        }
    }
}

/// Whether lifeline's clsact filter is still on the device (a tcx link cannot be taken away
/// from under the agent); when the filters cannot be listed, it is taken to be.
fn filter_there(a: &super::attach::Attachment) -> bool {
    let Chain::Clsact { priority, handle } = a.chain else {
        return true;
    };
    let name = lifeline_common::hooks::Hook::ProbeByte.program();
    nl::filters(a.index, nl::EGRESS).map_or(true, |fs| {
        fs.iter().any(|f| {
            f.priority == priority && f.handle == handle && f.name.as_deref() == Some(name)
        })
    })
}

impl FastProbes {
    pub(super) fn status(&self) -> FastStatus {
        let mut devices: Vec<FastDevice> = (self.attached.values())
            .map(|a| FastDevice {
                device: a.device.clone(),
                chain: a.chain,
                reach: a.meter.reach,
                seen: a.meter.window.0,
                sent: a.meter.window.1,
            })
            .collect();
        devices.sort_by(|a, b| a.device.cmp(&b.device));
        let mut refused: Vec<Refused> = (self.refused.iter())
            .map(|(d, w)| Refused {
                device: d.clone(),
                why: w.clone(),
            })
            .collect();
        refused.sort_by(|a, b| a.device.cmp(&b.device));
        let hidden = devices.iter().any(|d| d.reach == Reach::Hidden);
        FastStatus {
            summary: String::new(),
            state: if hidden {
                FastState::Hidden
            } else {
                FastState::On
            },
            why: None,
            devices,
            refused,
            hastened: self.hastened,
        }
    }
}
