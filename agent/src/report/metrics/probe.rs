//! The probe's own counters as metrics, read from its `STATS` map at each scrape (so they
//! are exactly the kernel's counts, with nothing to keep in step).

use std::sync::{Mutex, PoisonError};

use lifeline_common::config::stats;
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::counter::ConstCounter,
};

use crate::kernel::probe::StatsReader;

/// Which counters are exported, as (name, help, `stats` index).
const EXPORTED: [(&str, &str, u32); 1] = [(
    "probe_unanswered_news",
    "Keepalive probes of watched idle sockets that the kernel reported unanswered past the threshold (news, no sock_diag read)",
    stats::UNANSWERED,
)];

/// 0 until the daemon hands over its probe's counters.
#[derive(Debug, Default)]
pub struct ProbeCounters(Mutex<Option<StatsReaderDebug>>);

/// `StatsReader` holds an fd; the collector only needs to be `Debug`.
pub struct StatsReaderDebug(StatsReader);

impl std::fmt::Debug for StatsReaderDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StatsReader")
    }
}

impl ProbeCounters {
    pub fn follow(&self, reader: StatsReader) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(StatsReaderDebug(reader));
    }
}

impl Collector for ProbeCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let values = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|r| r.0.read().ok())
            .unwrap_or_default();
        for (name, help, index) in EXPORTED {
            let counter = ConstCounter::new(values[index as usize]);
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
