//! `lifeline run`: check the inputs, attach the probe, then sweep until told to stop.

use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use anyhow::{Context as _, Result, bail};
use lifeline_common::Keepalive;
use tokio::{
    signal::unix::{SignalKind, signal},
    sync::{Notify, watch},
};

use crate::{
    action::Actor,
    adopt::{self, Target},
    cgroup,
    cli::RunArgs,
    daemon::Daemon,
    diag::SockDiag,
    endpoint, errors,
    idle::IdleWatch,
    logging, mounts,
    probe::{Probe, ProbeConfig},
    readers, status,
};

/// # Errors
/// Bad input, missing privileges or kernel features, each with one clear message.
pub fn run(args: &RunArgs) -> Result<()> {
    if args.comms.iter().any(|c| c.is_empty() || c.len() > 15) {
        bail!("invalid --comm: a process name is 1 to 15 bytes (the kernel's TASK_COMM_LEN - 1)");
    }
    crate::node::validate(args)?;
    endpoint::setup::check(args)?;
    let endpoints = endpoint::setup::configured(args)?;
    errors::check_privileges()?;
    let _lock = crate::lock::acquire()?; // held until run returns: one agent per node
    crate::status_socket::prepare(&args.status_socket)?;
    let mount = cgroup::cgroup2_mount()?;
    let path: PathBuf = match (&args.cgroup, args.comms.is_empty()) {
        (Some(p), _) => cgroup::resolve(&mount, p),
        (None, true) => cgroup::resolve(&mount, cgroup::DEFAULT_CGROUP.as_ref()),
        (None, false) => mount.clone(),
    };
    let cgroup_file = cgroup::open(&path)?;
    let cgroup_ids = (path != mount).then(|| cgroup::subtree_ids(&path));
    logging::init(args.log)?;
    mounts::ensure("bpf", "/sys/fs/bpf");
    mounts::ensure("tracefs", "/sys/kernel/tracing");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let keepalive = keepalive_config(args);
        let cfg = ProbeConfig { cgroup: &cgroup_file, ports: &args.ports, comms: &args.comms, max_sockets: args.max_sockets, keepalive };
        let mut probe = Probe::load(&cfg)?;
        readers::spawn_probe_logger(&mut probe)?;
        let wake = Arc::new(Notify::new());
        readers::spawn_trouble_reader(&mut probe, &wake)?;
        let mut diag = SockDiag::open().context("opening sock_diag netlink")?;
        let target = Target { ports: args.ports.clone(), cgroup_ids, comms: args.comms.clone() };
        let polled = adopt::adopt(&mut probe, &mut diag, &target, keepalive != Keepalive::default())?;
        let follow = endpoint::setup::start(args, &endpoints, &wake)?;
        let (tx, rx) = watch::channel(status::Snapshot::default());
        let no_endpoints = endpoint::Endpoints::default();
        let (node, escalation) = crate::node::Node::start(args, &rx, follow.as_ref().map_or(&no_endpoints, |f| &f.endpoints))?;
        let server = status::serve(&args.status_socket, rx)?;
        let mut daemon = Daemon {
            probe,
            diag,
            polled,
            stall: args.stall_timeout,
            idle: IdleWatch::new(args.silent_timeout(), keepalive),
            actor: Actor::new(args.dry_run, args.max_kills_per_minute),
            status: tx,
            seen_dead: HashSet::new(),
            sockets_full: 0,
            unreadable: HashSet::new(),
            escalation,
            follow,
            migrations: HashMap::new(),
            orphans_logged: HashSet::new(),
        };
        tracing::info!(
            event = "ready",
            cgroup = %path.display(),
            ports = ?args.ports,
            comms = ?args.comms,
            stall_timeout_ms = u64::try_from(args.stall_timeout.as_millis()).unwrap_or(u64::MAX),
            keepalive = %args.keepalive.0.map_or_else(|| "off".to_owned(), |k| format!("{:?},{:?},{}", k.idle, k.interval, k.count)),
            silent_timeout_ms = args.silent_timeout().map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            dry_run = args.dry_run,
            endpoints = ?endpoints.list(),
            "probe attached; watching"
        );
        node.ready(&daemon.status.borrow());
        let result = sweep_until_signal(&mut daemon, args.sweep_interval, &wake).await;
        node.stop();
        server.abort();
        let _ = std::fs::remove_file(&args.status_socket);
        drop(daemon); // closes the links: every program is detached
        tracing::info!(event = "stopped", "probe detached");
        result
    })
}

/// `--keepalive` and `--user-timeout` as the probe's `KEEPALIVE` map entry.
pub(crate) fn keepalive_config(args: &RunArgs) -> Keepalive {
    let secs = |d: Duration| u32::try_from(d.as_secs()).unwrap_or(u32::MAX);
    let user_timeout_ms = args
        .user_timeout
        .map_or(0, |d| u32::try_from(d.as_millis()).unwrap_or(u32::MAX));
    args.keepalive.0.map_or(
        Keepalive {
            user_timeout_ms,
            ..Keepalive::default()
        },
        |k| Keepalive {
            idle_s: secs(k.idle),
            intvl_s: secs(k.interval),
            cnt: k.count,
            user_timeout_ms,
        },
    )
}

async fn sweep_until_signal(daemon: &mut Daemon, interval: Duration, wake: &Notify) -> Result<()> {
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut wait = interval;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            // A DNS answer changed or a peer probe finished: act on it now.
            () = wake.notified() => {}
            _ = term.recv() => return Ok(()),
            _ = int.recv() => return Ok(()),
        }
        wait = daemon.sweep(interval).await.unwrap_or_else(|e| {
            tracing::error!(error = %format!("{e:#}"), "sweep failed; retrying");
            interval
        });
    }
}
