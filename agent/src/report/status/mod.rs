//! `lifeline status`: the daemon answers on a Unix socket with a snapshot built for the
//! request; the command reads it and prints a table (or the JSON).

mod capacity;
mod client;
pub(crate) mod server;
pub(crate) mod socket;
mod table;

pub(crate) use capacity::Capacity;
pub(crate) use client::{fetch, fetch_within, print_json};
use serde::{Deserialize, Serialize};
pub(crate) use table::render;

use crate::report::snapshot::StatusRow;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    pub stall_timeout_ms: u64,
    /// `--stall-unanswered`: RTOs in a row that make a stall (0: the time rule alone).
    #[serde(default)]
    pub stall_unanswered: u8,
    /// `None` when keepalive is off.
    pub silent_timeout_ms: Option<u64>,
    pub kills: u64,
    /// Batches of kills held back because no endpoint address accepted a connection.
    pub holds: u64,
    /// What a clean stop puts back on the sockets lifeline armed, or why nothing can be, and
    /// what a dry run or a hold does to the kernel's own keepalive aborts.
    #[serde(default)]
    pub restore_on_stop: String,
    /// Sockets whose keepalive is deferred to the application's own deadline now.
    #[serde(default)]
    pub deferred: u64,
    /// How long the path to the endpoint has been found down (no address accepted a
    /// connection): no kill until it is back. Left out while it works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_down_ms: Option<u64>,
    /// Where the endpoints came from ("kubelet pid 812 --kubeconfig ..."); `None` without.
    pub endpoint_source: Option<String>,
    pub endpoints: Vec<crate::endpoint::EndpointStatus>,
    /// Sockets the probe could not record because its map was full.
    pub sockets_full: u64,
    /// The other counts of what could not be kept (and of connects skipped).
    #[serde(default)]
    pub capacity: Capacity,
    /// Each watch target and its state (`present`, `waiting`, `active`).
    #[serde(default)]
    pub targets: Vec<crate::watch::TargetStatus>,
    /// Watched sockets, and how many have each verdict (every verdict listed).
    #[serde(default)]
    pub watched: u64,
    #[serde(default)]
    pub verdicts: std::collections::BTreeMap<String, u64>,
    /// The fast probes: off, unavailable (why), or the devices their tc program is on and
    /// whether its octets go out there ("hidden": another program ahead of it ends the
    /// chain).
    #[serde(default)]
    pub fast_probes: crate::kernel::probe::FastStatus,
    /// The probe's counters (`STATS`, indexed by `lifeline_common::config::stats`) as read
    /// at the sweep: for the metrics, not part of what `lifeline status` shows.
    #[serde(skip)]
    pub probe_stats: [u64; lifeline_common::config::stats::LEN as usize],
    /// Why the rows are the agent's records of its last sweep rather than the kernel's view
    /// at the request: the `sock_diag` dump failed. Left out when it worked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_error: Option<String>,
    /// A row per watched socket: filled for `lifeline status`, empty in the summary the
    /// daemon publishes after every sweep (whose rows are written by hand, `daemon/table.rs`).
    /// The client's rows own their texts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sockets: Vec<StatusRow<'static>>,
}
