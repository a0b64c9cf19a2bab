//! kubelet's endpoint through a node-local proxy: at start, the kubeconfig's loopback
//! `server:` becomes the upstreams of the proxy serving kubelet's connection there
//! (`proxy`), and their sets are filled by the proxy's follower instead of DNS.

use std::sync::Arc;

use tokio::sync::Notify;

use super::{
    Endpoints, Resolver,
    proxy::{self, Proxy, blocking, follow::Steer},
    trust::Trust,
};
use crate::settings::run::Endpoint as Settings;

/// kubelet's loopback endpoint and what serves it.
#[derive(Debug)]
pub(crate) struct Via {
    /// The kubeconfig's `server:` (re-discovery compares it).
    pub server: (String, u16),
    pub found: Result<Proxy, String>,
    /// Servers of kubelet's connections that were refused (one line each).
    pub refused: Vec<String>,
}

/// The ports a proxy's own connections to the API servers are looked for on, when its
/// configuration does not list them: `--ports` and the API's usual ones (RKE2's supervisor
/// on 9345).
#[must_use]
pub(crate) fn api_ports(args: &Settings) -> Vec<u16> {
    let mut p = args.ports.clone();
    p.extend([443, 6443, 9345]);
    p.sort_unstable();
    p.dedup();
    p
}

/// What serves kubelet's connection to the loopback `server`, looked at off this thread
/// with a deadline (a proxy's file may never answer).
#[must_use]
pub(crate) fn look(args: &Settings, server: &(String, u16)) -> Option<Via> {
    let listen = proxy::loopback(&server.0, server.1)?;
    let (ports, trust) = (api_ports(args), Trust::new(&args.trusted_cgroups));
    let look = blocking::run_sync(move || proxy::find(listen, &ports, &trust.ids()));
    let (found, refused) = match look {
        Ok(l) => (l.found, l.refused),
        Err(late) => (Err(late.to_string()), Vec::new()),
    };
    Some(Via {
        server: server.clone(),
        found,
        refused,
    })
}

/// The endpoints for kubeconfig server `server`: itself, or the upstreams of the proxy
/// serving kubelet's connection to it when it is loopback (then with what was found there).
#[must_use]
pub(crate) fn through_proxy(
    args: &Settings,
    server: (String, u16),
) -> (Vec<(String, u16)>, Option<Via>) {
    let Some(via) = look(args, &server) else {
        return (vec![server], None);
    };
    let list = match &via.found {
        Ok(p) => p.upstreams.clone(),
        Err(_) => vec![server],
    };
    (list, Some(via))
}

/// The endpoints to follow for `list`, and the follower of kubelet's proxy: started when
/// `via` names a loopback endpoint, or when the endpoint is discovered (`steerable`: a
/// restarted kubelet may name a proxy later), inside the runtime.
#[must_use]
pub(crate) fn follow(
    args: &Settings,
    (list, via): (&[(String, u16)], Option<&Via>),
    steerable: bool,
    wake: &Arc<Notify>,
) -> (Endpoints, Option<(proxy::follow::Shared, Steer)>) {
    if via.is_none() && !steerable {
        return (Endpoints::new(list), None);
    }
    let resolver = || {
        Resolver::new(&args.dns_servers, &args.hosts_file)
            .inspect_err(|e| {
                tracing::warn!("{e:#}: names in the proxy's upstream list will not be resolved");
            })
            .ok()
    };
    let steer = Steer::default();
    let endpoints = match via {
        Some(via) => {
            for line in &via.refused {
                tracing::warn!(target: "lifeline::endpoint", "{line}");
            }
            steer.set(proxy::loopback(&via.server.0, via.server.1));
            match &via.found {
                Ok(p) => {
                    tracing::info!(target: "lifeline::endpoint", proxy = %p.name, pid = p.pid, cgroup = %p.cgroup,
                        "{p}: the endpoint is the proxy's upstreams; their sockets are the endpoint's, kubelet's loopback socket is judged by stall and silence only");
                    proxy::follow::endpoints(p)
                }
                Err(why) => {
                    tracing::warn!(target: "lifeline::endpoint",
                        "kubelet's API endpoint is loopback, but no proxy is identified there: {why}; kubelet's loopback socket is judged by stall and silence only, and the API servers behind it are not followed until a proxy is found there (looked for every {:?}; or name them with --endpoint)", proxy::follow::EVERY);
                    Endpoints::new(list)
                }
            }
        }
        None => Endpoints::new(list),
    };
    let shared = proxy::follow::spawn(
        proxy::follow::Inputs {
            steer: steer.clone(),
            proxy: via.and_then(|v| v.found.as_ref().ok().cloned()),
            trust: Trust::new(&args.trusted_cgroups),
            api_ports: api_ports(args),
            resolver: resolver(),
        },
        endpoints.clone(),
        Arc::clone(wake),
    );
    (endpoints, Some((shared, steer)))
}
