//! From the endpoint settings to a running endpoint follower.

use std::sync::Arc;

use anyhow::{Result, bail};
use tokio::sync::Notify;

use super::{
    Follow, Guard, Prober, Refresh, Resolver,
    discover::{self, Followed, Source},
    hop::{self, Via},
    kubeconfig,
    rediscover::{self, Rediscover},
    spawn_refreshers,
    trust::Trust,
};
use crate::settings::run::Endpoint as Settings;

/// The endpoints `run` follows, decided before anything is attached.
#[derive(Debug)]
pub(crate) enum Configured {
    /// Endpoints, and where they came from.
    Endpoints {
        list: Vec<(String, u16)>,
        source: Source,
        /// When the kubeconfig names a loopback address: the proxy there (then `list` is
        /// its upstreams), or why none was identified (then `list` is the loopback one).
        via: Option<Box<Via>>,
    },
    /// No flag, no kubelet running, no well-known kubeconfig: a node without kubelet yet.
    Nothing,
    /// Discovery found a kubeconfig that cannot be used; `problem` is one line naming it.
    /// The agent runs without an endpoint (the file is not the operator's input).
    Unusable { source: Source, problem: String },
}

impl Configured {
    /// The endpoints to follow (none unless `Endpoints`).
    #[must_use]
    pub(crate) fn list(&self) -> &[(String, u16)] {
        match self {
            Self::Endpoints { list, .. } => list,
            Self::Nothing | Self::Unusable { .. } => &[],
        }
    }
}

/// `Configured::Endpoints` for kubeconfig server `server` from `source` (see
/// `hop::through_proxy`).
fn through_proxy(args: &Settings, server: (String, u16), source: Source) -> Configured {
    let (list, via) = hop::through_proxy(args, server);
    Configured::Endpoints {
        list,
        source,
        via: via.map(Box::new),
    }
}

/// The endpoints to follow: `--endpoint`s, else the `server:` of `--kubeconfig`, else of the
/// kubeconfig discovery finds (`discover::find`: only a root kubelet in kubelet's cgroup
/// counts). A bad explicit kubeconfig is an error; a bad discovered one is `Unusable`.
///
/// # Errors
/// When an explicit kubeconfig cannot be read or has no server URL.
pub(crate) fn configured(args: &Settings) -> Result<Configured> {
    if !args.endpoints.is_empty() {
        return Ok(Configured::Endpoints {
            list: args.endpoints.clone(),
            source: Source::EndpointFlag,
            via: None,
        });
    }
    if let Some(path) = &args.kubeconfig {
        return Ok(through_proxy(
            args,
            kubeconfig::server(path)?,
            Source::KubeconfigFlag(path.clone()),
        ));
    }
    let Some(source) = discover::find(&Trust::new(&args.trusted_cgroups)) else {
        return Ok(Configured::Nothing);
    };
    Ok(match source.file().map(kubeconfig::server) {
        Some(Ok(server)) => through_proxy(args, server, source),
        Some(Err(e)) => Configured::Unusable {
            problem: format!("{e:#}"),
            source,
        },
        // Discovery only finds files; a source without one has nothing to read.
        None => Configured::Nothing,
    })
}

/// Validates the refresh bounds and the hosts file before anything is attached.
///
/// # Errors
/// When --min-refresh exceeds --max-refresh, or the hosts file exists but cannot be read
/// (a missing one is an empty one, as for glibc and Go).
pub(crate) fn check(args: &Settings) -> Result<()> {
    if let Err(e) = super::hosts::read(&args.hosts_file) {
        bail!("invalid --hosts-file: {e}");
    }
    if args.min_refresh > args.max_refresh {
        bail!(
            "invalid --min-refresh {:?}: it is longer than --max-refresh {:?}",
            args.min_refresh,
            args.max_refresh
        );
    }
    Ok(())
}

/// Starts the refresh tasks (inside the runtime), which count their failed resolutions in
/// `dns_failures`. `None` when there is no endpoint.
///
/// # Errors
/// When the system's DNS configuration is needed and cannot be read.
pub(crate) fn start(
    args: &Settings,
    found: &Configured,
    wake: &Arc<Notify>,
    dns_failures: &prometheus_client::metrics::counter::Counter,
) -> Result<Option<Follow>> {
    const OFF: &str = "DNS following, peer probes and the healthy-endpoint check are off";
    let (list, source, via) = match found {
        Configured::Endpoints { list, source, via } => (list, source, via),
        Configured::Nothing => {
            log_ignored(args);
            tracing::info!(
                "no API endpoint: no --endpoint or --kubeconfig, no kubelet with --kubeconfig running in this network namespace, no well-known kubeconfig; {OFF}"
            );
            return Ok(None);
        }
        Configured::Unusable { source, problem } => {
            log_ignored(args);
            tracing::warn!(source = %source, "{problem} (found as {source}); no API endpoint: {OFF}");
            return Ok(None);
        }
    };
    tracing::info!(source = %source, "API endpoint {} from {source}", super::names(list));
    // A discovered endpoint moves when kubelet restarts with another kubeconfig.
    let discovered = matches!(source, Source::Kubelet { .. } | Source::WellKnown(_));
    let (endpoints, hop) = hop::follow(args, (list, via.as_deref()), discovered, wake);
    let (hop, steer) = hop.unzip();
    let followed = Followed::new(source.clone());
    let fixed = endpoints
        .sets()
        .iter()
        .all(|s| s.lock().is_ok_and(|s| s.fixed || s.proxied));
    let refresh = Refresh {
        min: args.min_refresh,
        max: args.max_refresh,
    };
    if !fixed || discovered {
        match Resolver::new(&args.dns_servers, &args.hosts_file) {
            Ok(resolver) => spawn_refreshers(
                &endpoints,
                resolver,
                refresh,
                wake,
                discovered,
                dns_failures,
            ),
            // A discovered IP literal needs no resolver until kubelet names a host.
            Err(e) if fixed => tracing::warn!(
                "{e:#}: a name a restarted kubelet's kubeconfig may name will not be resolved"
            ),
            Err(e) => return Err(e),
        }
    }
    if discovered {
        Rediscover::new(
            args,
            (
                followed.clone(),
                via.as_ref()
                    .map_or_else(|| list.clone(), |v| vec![v.server.clone()]),
            ),
            (endpoints.clone(), steer.clone()),
            Arc::clone(wake),
        )
        .spawn();
    }
    let connect: Arc<dyn super::connect::Connect> = Arc::new(super::connect::Network);
    Ok(Some(Follow {
        source: followed,
        endpoints,
        // The system's clock: the daemon's own (`run` hands it the same).
        prober: Prober::new(
            Arc::clone(wake),
            crate::kernel::clock::system(),
            connect.clone(),
        ),
        connect,
        guard: Guard::default(),
        grace: args.orphan_grace,
        hop,
        steer,
    }))
}

/// Logs, once, each process named kubelet that discovery did not trust.
fn log_ignored(args: &Settings) {
    for i in discover::kubelet_source(&Trust::new(&args.trusted_cgroups)).1 {
        rediscover::log_ignored(&i);
    }
}
