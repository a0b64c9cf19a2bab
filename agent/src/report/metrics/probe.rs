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
const EXPORTED: [(&str, &str, u32); 8] = [
    (
        "probe_unanswered_news",
        "Keepalive probes of watched idle sockets that the kernel reported unanswered past the threshold (news, no sock_diag read)",
        stats::UNANSWERED,
    ),
    (
        "probe_sockets_full",
        "Sockets NOT watched because the probe's SOCKETS map was full (raise --max-sockets)",
        stats::SOCKETS_FULL,
    ),
    (
        "probe_endpoint_quota_full",
        "Sockets watched only for their peer (endpoint clients) NOT watched because their share of SOCKETS, a quarter, was full",
        stats::ENDPOINT_QUOTA_FULL,
    ),
    (
        "probe_news_lost",
        "News the probe could not queue in its ring buffer (each loss makes the agent re-read every record)",
        stats::NEWS_LOST,
    ),
    (
        "probe_owners_skipped",
        "Connects to a watched port that recorded nothing: no target, not to an endpoint address (the node's other traffic; no loss)",
        stats::OWNERS_SKIPPED,
    ),
    (
        "probe_fast_pokes",
        "Fast keepalive probes sent: an idle watched socket's probe was unanswered, the next came after --fast-probes with an octet of old data",
        stats::FAST_POKES,
    ),
    (
        "probe_fast_no_octet",
        "Fast phases stopped because a probe left without its octet (no tc program on its device): that socket went on at the kernel's cadence",
        stats::FAST_NO_OCTET,
    ),
    (
        "probe_fast_busy",
        "Fast phases stopped because a poke sent no probe: the application sent data meanwhile (no keepalive probe leaves while data is in flight), so its retransmissions are judged instead",
        stats::FAST_BUSY,
    ),
];

/// The agent's own count beside them: news its inbox had no room for.
const INBOX_DROPPED: (&str, &str) = (
    "news_inbox_dropped",
    "News the agent's inbox had no room for (each loss makes the agent re-read every record)",
);

/// 0 until the first sweep; a clone shows the same values.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProbeCounters(Arc<([AtomicU64; stats::LEN as usize], AtomicU64)>);

impl ProbeCounters {
    /// The counters as of a sweep (`Snapshot::probe_stats`, `Capacity::inbox_dropped`).
    pub(crate) fn observe(&self, values: &[u64; stats::LEN as usize], inbox_dropped: u64) {
        for (slot, value) in self.0.0.iter().zip(values) {
            slot.store(*value, Ordering::Relaxed);
        }
        self.0.1.store(inbox_dropped, Ordering::Relaxed);
    }
}

impl Collector for ProbeCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let values = EXPORTED
            .iter()
            .map(|(name, help, index)| (*name, *help, &self.0.0[*index as usize]))
            .chain([(INBOX_DROPPED.0, INBOX_DROPPED.1, &self.0.1)]);
        for (name, help, value) in values {
            let counter = ConstCounter::new(value.load(Ordering::Relaxed));
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
