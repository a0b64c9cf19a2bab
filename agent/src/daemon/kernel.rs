//! Everything the loop asks of the kernel, as one trait: the probe's records and news, its
//! maps the loop writes (the path's moments, the fast probes, the deferrals), `sock_diag`
//! (`Diag`: one socket's view, the status dump, the kill), and the watch stage's bookkeeping
//! that reads and writes both (target cgroups, the endpoint's peers, adoption). `Live` is the
//! kernel's (`live.rs`); the sweep tests run the same loop against a fake (`fake.rs`), without root. The
//! split follows cilium's agent (`daemon/cmd/cells.go`): infrastructure that needs privileges
//! apart from the control plane, which is tested against fakes of it.

use std::{net::SocketAddr, path::Path, time::Duration};

use anyhow::Result;
use lifeline_common::{
    config::stats,
    news::News,
    restore::{Defer, Original},
};

use crate::{
    act::owner::Scopes,
    endpoint::Follow,
    judge::{Cookie, Mono, Record},
    kernel::{
        diag::Diag,
        probe::{FastStatus, RestoreSummary},
    },
    watch::{TargetStatus, adopt::Adopted},
};

/// The probe's counters, summed over CPUs (`lifeline_common::config::stats`).
pub(crate) type Counters = [u64; stats::LEN as usize];

/// What the loop asks of the kernel (see the module's doc).
pub(crate) trait Kernel: Diag {
    /// The probe's news since the last call, oldest first.
    fn news(&mut self) -> Vec<News>;
    /// News the inbox dropped since the start (it was full).
    fn news_dropped(&self) -> u64;
    /// The probe's counters.
    ///
    /// # Errors
    /// When the map cannot be read.
    fn stats(&self) -> Result<Counters>;
    /// Every record, decoded (a whole read).
    ///
    /// # Errors
    /// When the map cannot be read.
    fn records(&self) -> Result<Vec<(Cookie, Record)>>;
    /// One record, decoded; `None` when its socket closed.
    ///
    /// # Errors
    /// When the map cannot be read.
    fn record(&self, cookie: Cookie) -> Result<Option<Record>>;
    /// Drop the record of a socket that is gone, with its other entries.
    fn forget(&mut self, cookie: Cookie);

    /// Once per sweep: target cgroups, the endpoint's peers, adoption of older sockets to a
    /// new peer (`watch::Watching::sync`).
    fn watch(&mut self, follow: Option<&Follow>, keepalive: bool) -> Adopted;
    /// What `lifeline status` shows of each target, as of the last `watch`.
    fn target_status(&self) -> Vec<TargetStatus>;
    /// The target cgroups' and the unit's subtrees as they are now (one batch of kills).
    fn scopes(&self, unit_dir: Option<&Path>) -> Scopes;
    /// Whether the TCP iterator loaded (older sockets armed, deferrals, restore on stop).
    fn can_adopt(&self) -> bool;

    /// Follow the path to `peer` in `PATH_ALIVE`.
    ///
    /// # Errors
    /// When the map is full or cannot be written.
    fn add_path_peer(&mut self, peer: SocketAddr) -> Result<()>;
    fn remove_path_peer(&mut self, peer: SocketAddr);
    /// The path to `peer` worked at `at`.
    fn path_alive(&mut self, peer: SocketAddr, at: Mono);

    /// The fast probes' interval; `None`: no fast probes.
    fn fast_interval(&self) -> Option<Duration>;
    /// Attach the fast probes' tc program to the devices `peers` are routed through.
    fn fast_devices(&mut self, peers: Vec<std::net::IpAddr>);
    fn fast_status(&self) -> FastStatus;
    /// One iterator pass that pokes the sockets due.
    ///
    /// # Errors
    /// When the iterator cannot run.
    fn fast_pass(&mut self) -> Result<()>;
    /// Whether `cookie`'s fast phase is still open.
    fn fast_open(&self, cookie: Cookie) -> bool;
    /// Open `cookie`'s fast phase now, before the kernel would (its second probe); `false`
    /// when it cannot be (no fast probes, gone, deferred, not worth it, open already).
    fn fast_open_now(&mut self, cookie: Cookie) -> bool;
    fn fast_close(&mut self, cookie: Cookie);

    /// What the application had on `cookie`, when recorded.
    fn original(&self, cookie: Cookie) -> Option<Original>;
    /// Apply deferrals (one iterator pass); each socket's record after it.
    ///
    /// # Errors
    /// When the map cannot be written or the iterator cannot run.
    fn defer(&mut self, entries: &[(Cookie, Defer)]) -> Result<Vec<(Cookie, Option<Record>)>>;
    /// The restore pass at a clean stop; on failure, the sockets that keep lifeline's values.
    ///
    /// # Errors
    /// When the pass cannot run (with the sockets left as lifeline set them).
    fn restore(&mut self) -> Result<RestoreSummary, (anyhow::Error, usize)>;
}
