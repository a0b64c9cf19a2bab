//! Loading the kernel probe, configuring its maps and attaching it to the cgroup v2 root.

use std::{fs::File, os::fd::AsFd};

use anyhow::Result;
use aya::{Ebpf, EbpfLoader, VerifierLogLevel};
use lifeline_common::{
    Keepalive,
    features::{ITER_CALLBACKS, ITER_KEEPALIVE},
    hooks::Hook,
    maps,
};

mod access;
mod attach;
mod batch;
mod btf;
mod counters;
mod entries;
mod fast;
mod keepalive_fn;
mod maps_setup;
mod object;
mod path_alive;
pub(crate) mod pin;
mod records;
mod restore;
mod sockopt;
mod unanswered;
mod watch_maps;
pub(crate) use fast::{FastProbes, FastState, FastStatus, FastUnavailable, Reach};
use maps_setup::{armed_keepalive, configure, load_iter, raise_memlock};
pub(crate) use object::object;
pub(crate) use restore::RestoreSummary;
pub(crate) use sockopt::AppKeepaliveHook;

pub(crate) struct ProbeConfig<'a> {
    /// The cgroup v2 root: attached there, the probe outlives every unit's cgroup.
    pub root: &'a File,
    pub ports: &'a [u16],
    pub targets: &'a crate::settings::Targets,
    pub max_sockets: u32,
    /// What to arm watched sockets with; `idle_s` 0: no keepalive.
    pub keepalive: Keepalive,
    /// `--silent-probes`: keepalive news comes at the first unanswered probe, then again from
    /// two probes before it (`unanswered_min`).
    pub silent_probes: u8,
    /// Arm linear retransmission timeouts (`--stall-unanswered` above 0).
    pub linear_timeouts: bool,
    /// `--fast-probes`; `None`: off.
    pub fast_probes: Option<std::time::Duration>,
    /// `--dry-run`: lifeline only observes. Without the TCP iterator (before 5.15) nothing
    /// could take its keepalive back before the kernel aborts a silent socket with it, so
    /// none is armed then (nor `TCP_USER_TIMEOUT`, never armed in a dry run: it observes
    /// nothing).
    pub dry_run: bool,
    /// `lifeline run`: put back what a previous agent that did not stop cleanly changed
    /// (its pinned originals), and pin this agent's (`pin.rs`). `check` does neither.
    pub recover: bool,
}

pub(crate) struct Probe {
    ebpf: Ebpf,
    /// `false` when the TCP iterator could not load (kernel < 5.15 or no BTF); where it
    /// loads, it may still be unable to arm the callbacks (kernel < 6.12): see `adopt`.
    pub can_adopt: bool,
    /// `true` when the `cgroup_mkdir`/`rmdir` tracepoints keep the target cgroups current;
    /// otherwise the agent's sweep does, and a restarted unit's first connection may be
    /// adopted rather than seen from its SYN.
    pub tracks_cgroups: bool,
    /// Why the tracepoints could not be used, when they could not.
    pub tracking_error: Option<String>,
    /// Whether the application's own keepalive calls are merged with lifeline's.
    pub app_keepalive: AppKeepaliveHook,
    /// `true` when the kernel reports unanswered keepalive probes of watched sockets
    /// (`news::UNANSWERED`); otherwise idle sockets must be read through `sock_diag`.
    pub unanswered_news: bool,
    /// Which program reports them (`Hook::Unanswered` or its tracepoint fallback), or why
    /// none does.
    pub unanswered_hook: Result<Hook, String>,
    /// The fast keepalive probes' tc program and its devices, or why there are none.
    pub fast: Result<FastProbes, FastUnavailable>,
    /// What the probe arms watched sockets with (`ProbeConfig::keepalive`, or nothing in a
    /// dry run that could not take it back).
    pub keepalive: Keepalive,
    /// Where this agent's originals are pinned for the next start, or why they are not.
    pub pinned: Result<std::path::PathBuf, String>,
    /// What this agent wrote to `PATH_ALIVE`, the map's only writer (`path_alive.rs`).
    path_written: path_alive::Written,
}

/// `OWNERS` has one LRU list per CPU, each with an equal share of the entries: 1,024 per
/// possible CPU, at least 16,384 in all.
fn owners_entries() -> u32 {
    let cpus = aya::util::nr_cpus().map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX));
    cpus.saturating_mul(1024).max(16_384)
}

/// The share of `SOCKETS` that sockets watched only for their peer may hold: a quarter, so
/// that anyone's connections to the API address can never take the records targets need.
#[must_use]
pub(crate) fn endpoint_quota(max_sockets: u32) -> u32 {
    (max_sockets / 4).max(1)
}

impl Probe {
    /// Load the object, fill the configuration maps and attach every program.
    ///
    /// # Errors
    /// With a message naming the program or map that failed and why.
    pub(crate) fn load(cfg: &ProbeConfig<'_>) -> Result<Self> {
        let object = object()?;
        raise_memlock();
        let mut loader = EbpfLoader::new();
        // The whole verifier log, for whoever debugs a rejection on their kernel.
        if std::env::var_os("LIFELINE_VERIFIER_LOG").is_some() {
            loader.verifier_log_level(VerifierLogLevel::VERBOSE | VerifierLogLevel::STATS);
        }
        let news_globals = unanswered::Globals::from_kernel(cfg.silent_probes, cfg.fast_probes);
        if let Ok(g) = &news_globals {
            g.set(&mut loader);
        }
        let mut ebpf = loader
            .map_max_entries(maps::SOCKETS, cfg.max_sockets)
            .map_max_entries(maps::TUPLES, cfg.max_sockets)
            .map_max_entries(maps::ORIGINALS, cfg.max_sockets)
            .map_max_entries(maps::OWNERS, owners_entries())
            .map_max_entries(maps::PEER_OWNERS, owners_entries())
            .map_max_entries(maps::ENDPOINT_QUOTA, endpoint_quota(cfg.max_sockets))
            .load(object)
            .map_err(|e| crate::kernel::errors::explain_load(&e))?;
        // The iterator first: a dry run arms keepalive only where it can take it back, what
        // a crashed agent changed is put back before this one arms anything, and the
        // keepalive news fallback may need it.
        let can_adopt = match load_iter(&mut ebpf) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "TCP iterator unavailable (keepalive on sockets that predate the agent needs Linux {}.{} and BTF, their callbacks {}.{}): they are polled through sock_diag, without keepalive; nothing lifeline sets is put back when it stops",
                    ITER_KEEPALIVE.since.0, ITER_KEEPALIVE.since.1, ITER_CALLBACKS.since.0, ITER_CALLBACKS.since.1);
                false
            }
        };
        let keepalive = armed_keepalive(cfg, can_adopt);
        configure(&mut ebpf, cfg, keepalive)?;
        // Before anything that selects sockets: target cgroups made from now on are seen.
        let tracking_error = if cfg.targets.cgroups.is_empty() {
            None
        } else {
            attach::tracepoints(&mut ebpf)
                .err()
                .map(|e| format!("{e:#}"))
        };
        let pinned = if cfg.recover {
            pin::log(pin::recover(&mut ebpf, can_adopt));
            pin::pin(&ebpf).map_err(|e| format!("{e:#}"))
        } else {
            Err("not asked for".to_owned())
        };
        let cgroup = cfg.root.as_fd();
        attach::cgroup_root(&mut ebpf, cgroup)?;
        let app_keepalive = sockopt::load(&mut ebpf, cgroup);
        let unanswered_hook = unanswered::attach(&mut ebpf, &news_globals, can_adopt);
        let fast = fast::load(
            &mut ebpf,
            cfg.fast_probes,
            cfg.silent_probes,
            can_adopt && unanswered_hook.is_ok(),
        );
        Ok(Self {
            ebpf,
            can_adopt,
            tracks_cgroups: tracking_error.is_none(),
            tracking_error,
            app_keepalive,
            unanswered_news: unanswered_hook.is_ok(),
            unanswered_hook,
            fast,
            keepalive,
            pinned,
            path_written: path_alive::Written::default(),
        })
    }
}
