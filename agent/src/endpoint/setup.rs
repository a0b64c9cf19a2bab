//! From the command line to a running endpoint follower.

use std::{path::Path, sync::Arc};

use anyhow::{Result, bail};
use tokio::sync::Notify;

use super::{Endpoints, Follow, Guard, Prober, Refresh, Resolver, kubeconfig, spawn_refreshers};
use crate::cli::{OnOrphan, RunArgs};

const DEFAULT_KUBECONFIG: &str = "/etc/kubernetes/kubelet.conf";

/// The endpoints to follow: `--endpoint`s, else the kubeconfig's server. A missing default
/// kubeconfig means none (a node without kubelet yet); a bad or missing explicit one is an
/// error.
///
/// # Errors
/// When an explicit kubeconfig cannot be read or has no server URL.
pub fn configured(args: &RunArgs) -> Result<Vec<(String, u16)>> {
    if !args.endpoints.is_empty() {
        return Ok(args.endpoints.clone());
    }
    match &args.kubeconfig {
        Some(path) => Ok(vec![kubeconfig::server(path)?]),
        None if Path::new(DEFAULT_KUBECONFIG).exists() => {
            Ok(vec![kubeconfig::server(Path::new(DEFAULT_KUBECONFIG))?])
        }
        None => Ok(Vec::new()),
    }
}

/// Validates the refresh bounds before anything is attached.
///
/// # Errors
/// When --min-refresh exceeds --max-refresh.
pub fn check(args: &RunArgs) -> Result<()> {
    if args.min_refresh > args.max_refresh {
        bail!(
            "invalid --min-refresh {:?}: it is longer than --max-refresh {:?}",
            args.min_refresh,
            args.max_refresh
        );
    }
    Ok(())
}

/// Starts the refresh tasks (inside the runtime). `None` when there is no endpoint.
///
/// # Errors
/// When the system's DNS configuration is needed and cannot be read.
pub fn start(args: &RunArgs, list: &[(String, u16)], wake: &Arc<Notify>) -> Result<Option<Follow>> {
    if list.is_empty() {
        tracing::info!(
            "no API endpoint configured (--endpoint, --kubeconfig): DNS following, peer probes and the healthy-endpoint check are off"
        );
        return Ok(None);
    }
    let endpoints = Endpoints::new(list);
    if endpoints
        .sets()
        .iter()
        .any(|s| !s.lock().is_ok_and(|s| s.fixed))
    {
        let resolver = Resolver::new(&args.dns_servers)?;
        spawn_refreshers(
            &endpoints,
            resolver,
            Refresh {
                min: args.min_refresh,
                max: args.max_refresh,
            },
            wake,
        );
    }
    Ok(Some(Follow {
        endpoints,
        prober: Prober::new(Arc::clone(wake)),
        guard: Guard::default(),
        grace: args.orphan_grace,
        migrate: args.on_orphan == OnOrphan::Migrate,
        spread: args.migrate_spread,
    }))
}
