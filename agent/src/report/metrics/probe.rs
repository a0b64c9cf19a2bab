//! The probe's own counters as metrics: the `STATS` map as the daemon read it at its last
//! sweep (it reads the map every sweep anyway, for the map-full check) and published in
//! its summary, so the map has one reader. A sweep follows each piece of news at once.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use lifeline_common::config::stats;
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::counter::ConstCounter,
};

/// Which counters are exported, as (name, help, `stats` index).
const EXPORTED: [(&str, &str, u32); 1] = [(
    "probe_unanswered_news",
    "Keepalive probes of watched idle sockets that the kernel reported unanswered past the threshold (news, no sock_diag read)",
    stats::UNANSWERED,
)];

/// 0 until the first sweep; a clone shows the same values.
#[derive(Clone, Debug, Default)]
pub struct ProbeCounters(Arc<[AtomicU64; stats::LEN as usize]>);

impl ProbeCounters {
    /// The counters as of a sweep (`Snapshot::probe_stats`).
    pub fn observe(&self, values: &[u64; stats::LEN as usize]) {
        for (slot, value) in self.0.iter().zip(values) {
            slot.store(*value, Ordering::Relaxed);
        }
    }
}

impl Collector for ProbeCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, help, index) in EXPORTED {
            let counter = ConstCounter::new(self.0[index as usize].load(Ordering::Relaxed));
            counter.encode(encoder.encode_descriptor(
                name,
                help,
                None,
                counter.metric_type(),
            )?)?;
        }
        Ok(())
    }
}
