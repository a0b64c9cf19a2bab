//! `lifeline run`: check the inputs, attach the probe, then sweep until told to stop.

use std::{sync::Arc, time::Duration};

use anyhow::{Context as _, Result};
use lifeline_common::Keepalive;
use tokio::{
    signal::unix::{SignalKind, signal},
    sync::{Notify, watch},
};

mod node;

use crate::{
    daemon::Daemon,
    endpoint,
    judge::{self, Judge},
    kernel::{
        diag::SockDiag,
        errors,
        probe::{Probe, ProbeConfig},
        readers,
    },
    node::mounts,
    report::{
        logging,
        metrics::{Metrics, servers},
        status,
    },
    settings::{Run, Targets},
    watch::{Watching, adopt, cgroup, netns},
};

/// # Errors
/// Bad input, missing privileges or kernel features, each with one clear message.
pub(crate) fn run(args: &Run, signals: &std::io::Result<()>) -> Result<()> {
    // Before anything is mounted or locked: a binary without its object can do nothing.
    crate::kernel::probe::object()?;
    node::validate(args)?;
    let silence = args
        .watch
        .silence()
        .map_err(anyhow::Error::msg)?
        .map(|(after, probes)| judge::Silence { after, probes });
    endpoint::setup::check(&args.endpoint)?;
    let endpoints = endpoint::setup::configured(&args.endpoint)?;
    let cgroup2 = cgroup::cgroup2_mount()?;
    let targets = Targets::new(&args.watch, &cgroup2.mount, std::path::Path::new("/"))?;
    errors::check_privileges()?;
    let _lock = crate::node::lock::acquire()?; // held until run returns: one agent per node
    crate::report::status::socket::prepare(&args.report.status_socket)?;
    let root = cgroup::open(&cgroup2.mount)?;
    logging::init(args.report.log)?;
    if let Err(why) = crate::node::signals::describe(signals) {
        tracing::warn!("{why}");
    }
    cgroup2.log();
    mounts::ensure("bpf", "/sys/fs/bpf");
    mounts::ensure("tracefs", "/sys/kernel/tracing");
    let ports = watched_ports(&args.watch.ports, &targets, endpoints.list());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let (mut probe, keepalive, silence) = load_probe(args, &root, &ports, &targets, silence)?;
        // The one set of metrics: each part that counts gets its handle.
        let metrics = Metrics::new();
        readers::spawn_probe_logger(&mut probe)?;
        let wake = Arc::new(Notify::new());
        let inbox = readers::Inbox::default();
        readers::spawn_news_reader(&mut probe, &wake, &inbox)?;
        let first_port = *ports.first().context("no port to watch (--ports)")?;
        netns::calibrate(&mut probe, first_port)?;
        let described = targets.describe();
        let watching = Watching::start(&mut probe, targets, ports.clone());
        let mut diag = SockDiag::open().context("opening sock_diag netlink")?;
        let armed = keepalive != Keepalive::default();
        let polled = adopt::adopt(&mut probe, &mut diag, &watching.selector(), armed)?.polled;
        let follow =
            endpoint::setup::start(&args.endpoint, &endpoints, &wake, &metrics.dns_failures())?;
        let (tx, rx) = watch::channel(status::Snapshot::default());
        let no_endpoints = endpoint::Endpoints::default();
        let (node, restarts) = node::NodeTasks::start(
            args,
            &rx,
            follow.as_ref().map_or(&no_endpoints, |f| &f.endpoints),
            &watching.targets,
            &cgroup2.mount,
            &metrics,
        )?;
        let (ask_tx, mut asks) = tokio::sync::mpsc::unbounded_channel();
        let gate = metrics.gate(servers::STATUS, status::server::MAX_CLIENTS);
        status::server::serve(&args.report.status_socket, ask_tx, gate)?;
        let judge = new_judge(args, silence, keepalive, restarts.is_some(), &probe);
        let defer = crate::daemon::defer::Deferrals::new(
            args.judge.dry_run,
            probe.can_adopt,
            args.watch.silent_probes,
        );
        let restores = probe.can_adopt;
        let kernel = crate::daemon::Live::new(probe, diag, watching, inbox);
        let mut daemon = Daemon::new(crate::daemon::Parts {
            kernel: Box::new(kernel),
            polled,
            judge,
            clock: crate::kernel::clock::system(),
            status: tx,
            restarts,
            follow,
            counts: metrics.counts(),
            defer,
        });
        log_ready(
            args,
            &described,
            &ports,
            silence,
            keepalive,
            restores,
            endpoints.list(),
        );
        // The first snapshot (with the targets' states) before READY, so that STATUS and
        // `lifeline status` say at once what is watched and what is waiting.
        let wait = daemon.sweep(args.sweep.interval).await?;
        node.ready(&daemon.published());
        let result =
            sweep_until_signal(&mut daemon, args.sweep.interval, wait, &wake, &mut asks).await;
        node.stop();
        let _ = std::fs::remove_file(&args.report.status_socket);
        // The application's socket options back, before the last program goes.
        daemon.restore();
        drop(daemon); // closes the links: every program is detached
        tracing::info!(event = "stopped", "probe detached");
        result
    })
}

/// Load and attach the probe; what it arms (a dry run arms nothing it could not take back),
/// and the silent rule that goes with it.
fn load_probe(
    args: &Run,
    root: &std::fs::File,
    ports: &[u16],
    targets: &Targets,
    silence: Option<judge::Silence>,
) -> Result<(Probe, Keepalive, Option<judge::Silence>)> {
    let cfg = ProbeConfig {
        root,
        ports,
        targets,
        max_sockets: args.watch.max_sockets,
        keepalive: args.watch.keepalive_map(),
        silent_probes: args.watch.silent_probes,
        linear_timeouts: args.judge.stall_unanswered > 0,
        fast_probes: args.watch.fast_probes,
        dry_run: args.judge.dry_run,
        recover: true,
    };
    let probe = Probe::load(&cfg).map(Probe::without_stale_tc)?;
    if let Err(why) = &probe.pinned {
        tracing::info!(reason = %why, "what lifeline changes on sockets is not kept for the next start: after a crash they keep its values until they close");
    }
    let keepalive = probe.keepalive;
    Ok((probe, keepalive, silence.filter(|_| keepalive.idle_s != 0)))
}

/// The `ready` event: what is watched, and with what.
fn log_ready(
    args: &Run,
    described: &[String],
    ports: &[u16],
    silence: Option<judge::Silence>,
    keepalive: Keepalive,
    restores: bool,
    endpoints: &[(String, u16)],
) {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let armed = if keepalive.idle_s == 0 && args.watch.keepalive_map().idle_s != 0 {
        "off (--dry-run without the TCP iterator)".to_owned()
    } else {
        args.watch.keepalive_text()
    };
    tracing::info!(
        event = "ready",
        targets = ?described,
        ports = ?ports,
        stall_timeout_ms = ms(args.judge.stall_timeout),
        stall_unanswered = args.judge.stall_unanswered,
        keepalive = %armed,
        silent_timeout_ms = silence.map(|s| ms(s.after)),
        silent_probes = silence.map(|s| s.probes),
        dry_run = args.judge.dry_run,
        restore_on_stop = restores,
        endpoints = ?endpoints,
        "probe attached to the cgroup v2 root; watching"
    );
}

/// The judge, from the flags; `restarts`: a restarter runs (`--restart-unit`).
fn new_judge(
    args: &Run,
    silence: Option<judge::Silence>,
    keepalive: Keepalive,
    restarts: bool,
    probe: &Probe,
) -> Judge {
    let settings = judge::Settings {
        stall: judge::Stall::new(args.judge.stall_timeout, args.judge.stall_unanswered),
        silent: silence,
        want: keepalive,
        migrate: args.judge.migrate,
        spread: args.judge.migrate_spread,
        dry_run: args.judge.dry_run,
        max_kills_per_minute: args.judge.max_kills_per_minute,
        seed: judge::Seed(args.sweep.seed),
    };
    let escalation =
        restarts.then(|| judge::Escalation::new(args.node.action, args.node.escalate_after));
    let mut judge = Judge::new(settings, escalation);
    // With the kernel's news of unanswered keepalive probes, a healthy idle socket is never
    // looked at; without it, on a schedule.
    judge.set_unanswered_news(probe.unanswered_news);
    judge
}

/// `--ports`, plus the endpoints' ports when their clients are targets (the hooks select
/// by port first).
fn watched_ports(flag: &[u16], targets: &Targets, endpoints: &[(String, u16)]) -> Vec<u16> {
    let mut ports = flag.to_vec();
    if targets.endpoint_clients {
        ports.extend(endpoints.iter().map(|(_, p)| *p));
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

async fn sweep_until_signal(
    daemon: &mut Daemon,
    interval: Duration,
    first_wait: Duration,
    wake: &Notify,
    asks: &mut tokio::sync::mpsc::UnboundedReceiver<crate::report::status::server::Ask>,
) -> Result<()> {
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut next = tokio::time::Instant::now() + first_wait;
    // Far enough never to come: no fast phase is open.
    let never = Duration::from_hours(24);
    // Without an endpoint no probe runs: a notice nobody wakes.
    let found = daemon.found().unwrap_or_default();
    loop {
        let fast = tokio::time::Instant::now() + daemon.fast_due().unwrap_or(never);
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            // A keepalive probe went unanswered: the TCP iterator pokes the next one.
            () = tokio::time::sleep_until(fast) => {
                daemon.fast_pass();
                continue;
            }
            // A peer probe found its peer alive: its finding is taken without a sweep
            // (`Daemon::quiet_finding`).
            () = found.notified() => {
                if daemon.quiet_finding() {
                    continue;
                }
            }
            // A DNS answer changed or a peer probe finished with news: act on it now.
            () = wake.notified() => {}
            // `lifeline status`: answered between two sweeps, without moving the next one.
            Some(reply) = asks.recv() => {
                match daemon.status_body() {
                    Ok(s) => drop(reply.send(s)),
                    Err(e) => tracing::warn!(error = %format!("{e:#}"), "cannot answer a status request"),
                }
                continue;
            }
            _ = term.recv() => return Ok(()),
            _ = int.recv() => return Ok(()),
        }
        let wait = daemon.sweep(interval).await.unwrap_or_else(|e| {
            tracing::error!(error = %format!("{e:#}"), "sweep failed; retrying");
            interval
        });
        next = tokio::time::Instant::now() + wait;
    }
}
