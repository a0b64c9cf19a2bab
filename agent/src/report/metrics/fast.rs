//! `lifeline_fast_probes_hidden{device}`: 1 while another program hides the fast probes' tc
//! program on a device (`kernel/probe/fast/reach.rs`), 0 while its octets go out there or
//! it is not yet measured; a device the program left drops out.

use std::sync::{Arc, Mutex};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::kernel::probe::{FastStatus, Reach};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeviceLabel {
    device: String,
}

#[derive(Clone, Debug, Default)]
pub(super) struct FastGauge {
    hidden: Family<DeviceLabel, Gauge>,
    /// The devices of the last snapshot.
    devices: Arc<Mutex<Vec<String>>>,
}

impl FastGauge {
    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "fast_probes_hidden",
            "1 while the fast probes are hidden by another program on the device: it sends packets lifeline's tc program never sees (a program ahead of it in the chain ends it), so idle sockets through it are probed at the kernel's 1 s cadence",
            self.hidden.clone(),
        );
    }

    pub(super) fn observe(&self, s: &FastStatus) {
        let Ok(mut known) = self.devices.lock() else {
            return;
        };
        for d in &s.devices {
            let label = DeviceLabel {
                device: d.device.clone(),
            };
            self.hidden
                .get_or_create(&label)
                .set(i64::from(d.reach == Reach::Hidden));
        }
        for gone in known
            .iter()
            .filter(|k| s.devices.iter().all(|d| &d.device != *k))
        {
            self.hidden.remove(&DeviceLabel {
                device: gone.clone(),
            });
        }
        *known = s.devices.iter().map(|d| d.device.clone()).collect();
    }
}
