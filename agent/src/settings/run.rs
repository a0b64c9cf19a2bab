//! `run` and `check` settings: the parsed command line (config file merged) as one typed
//! value per stage. Built by `Run::from_args` alone, so `check` sees what `run` would; no
//! stage reads `cli::RunArgs`.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use super::kinds::{ActionMode, LogTarget, SystemdBus};
use crate::cli::{OnOrphan, RunArgs};

/// Everything `lifeline run` (and `lifeline check`) runs with.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    /// `--config` when given (a missing default file is no source).
    pub config: Option<PathBuf>,
    pub watch: Watch,
    pub endpoint: Endpoint,
    pub judge: JudgeSettings,
    pub node: Node,
    pub report: Report,
    pub sweep: Sweep,
}

/// What the probe and the watch select and arm.
#[derive(Clone, Debug)]
pub(crate) struct Watch {
    /// `--cgroup`, as given (the default target is applied by `Targets::new`).
    pub cgroups: Vec<PathBuf>,
    pub comms: Vec<String>,
    pub endpoint_clients: bool,
    pub ports: Vec<u16>,
    pub max_sockets: u32,
    /// `None`: `--keepalive off`.
    pub keepalive: Option<KeepaliveSettings>,
    pub silent_probes: u8,
    pub silent_timeout: Option<Duration>,
    /// `--fast-probes`; `None`: off.
    pub fast_probes: Option<Duration>,
    pub user_timeout: Option<Duration>,
}

/// An enabled `--keepalive`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeepaliveSettings {
    pub idle: Duration,
    pub interval: Duration,
    pub count: u32,
}

/// Which API endpoint to follow and how.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    /// `--endpoint` NAME:PORT pairs.
    pub endpoints: Vec<(String, u16)>,
    pub kubeconfig: Option<PathBuf>,
    pub dns_servers: Vec<SocketAddr>,
    pub hosts_file: PathBuf,
    pub min_refresh: Duration,
    pub max_refresh: Duration,
    pub orphan_grace: Duration,
    /// The `--cgroup`s a kubelet found by discovery is trusted in (beside kubelet's unit).
    pub trusted_cgroups: Vec<PathBuf>,
    /// `--ports`: the watched ports, which re-discovery warns about leaving.
    pub ports: Vec<u16>,
}

/// The judge's rules.
#[derive(Clone, Debug)]
pub(crate) struct JudgeSettings {
    pub stall_timeout: Duration,
    /// `--stall-unanswered`; 0: the time rule alone, no linear timeouts.
    pub stall_unanswered: u8,
    /// `--on-orphan migrate`.
    pub migrate: bool,
    pub migrate_spread: Duration,
    pub dry_run: bool,
    pub max_kills_per_minute: u32,
}

/// Escalation to a restart of the node daemon's unit.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub action: ActionMode,
    /// Without it lifeline never restarts anything.
    pub restart_unit: Option<String>,
    pub escalate_after: Duration,
    pub max_restarts: u32,
    pub restart_backoff: Duration,
    pub systemd_bus: SystemdBus,
}

/// Where the agent says what it does.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    pub status_socket: PathBuf,
    pub log: LogTarget,
    pub metrics_addr: Option<SocketAddr>,
    pub metrics_allow_remote: bool,
}

/// The loop's pace and its randomness.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sweep {
    pub interval: Duration,
    /// For the judge's jitter: drawn per process, so two agents never spread alike.
    pub seed: u64,
}

impl Run {
    /// The settings the command line (with the config file merged) names, and a fresh seed.
    #[must_use]
    pub(crate) fn from_args(args: &RunArgs) -> Self {
        let n = &args.node;
        Self {
            config: n.config.clone(),
            watch: Watch {
                cgroups: args.cgroups.clone(),
                comms: args.comms.clone(),
                endpoint_clients: args.endpoint_clients,
                ports: args.ports.clone(),
                max_sockets: args.max_sockets,
                keepalive: args.keepalive.0.map(|k| KeepaliveSettings {
                    idle: k.idle,
                    interval: k.interval,
                    count: k.count,
                }),
                silent_probes: args.silent_probes,
                silent_timeout: args.silent_timeout,
                fast_probes: args.fast_probes.0,
                user_timeout: args.user_timeout,
            },
            endpoint: Endpoint {
                endpoints: args.endpoints.clone(),
                kubeconfig: args.kubeconfig.clone(),
                dns_servers: args.dns_servers.clone(),
                hosts_file: args.hosts_file.clone(),
                min_refresh: args.min_refresh,
                max_refresh: args.max_refresh,
                orphan_grace: args.orphan_grace,
                trusted_cgroups: args.cgroups.clone(),
                ports: args.ports.clone(),
            },
            judge: JudgeSettings {
                stall_timeout: args.stall_timeout,
                stall_unanswered: args.stall_unanswered,
                migrate: args.on_orphan == OnOrphan::Migrate,
                migrate_spread: args.migrate_spread,
                dry_run: args.dry_run,
                max_kills_per_minute: args.max_kills_per_minute,
            },
            node: Node {
                action: n.action.into(),
                restart_unit: n.restart_unit.clone(),
                escalate_after: n.escalate_after,
                max_restarts: n.max_restarts,
                restart_backoff: n.restart_backoff,
                systemd_bus: (&n.systemd_bus).into(),
            },
            report: Report {
                status_socket: args.status_socket.clone(),
                log: args.log.into(),
                metrics_addr: n.metrics_addr,
                metrics_allow_remote: n.metrics_allow_remote,
            },
            sweep: Sweep {
                interval: args.sweep_interval,
                seed: random_seed(),
            },
        }
    }
}

/// A seed from std's random hash keys (drawn from the kernel's random source).
fn random_seed() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}
