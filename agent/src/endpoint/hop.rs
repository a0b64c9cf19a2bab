//! kubelet's endpoint through a node-local proxy: at start, the kubeconfig's loopback
//! `server:` becomes the upstreams of the proxy listening there (`proxy`), and their sets
//! are filled by the proxy's follower instead of DNS.

use std::sync::Arc;

use tokio::sync::Notify;

use super::{
    Endpoints, Resolver,
    proxy::{self, Proxy},
};
use crate::settings::run::Endpoint as Settings;

/// kubelet's loopback endpoint and what listens there.
#[derive(Debug)]
pub struct Via {
    /// The kubeconfig's `server:` (re-discovery compares it).
    pub server: (String, u16),
    pub found: Result<Proxy, String>,
}

/// The ports a proxy's own connections to the API servers are looked for on, when its
/// configuration does not list them: `--ports` and the API's usual ones (RKE2's supervisor
/// on 9345).
fn api_ports(args: &Settings) -> Vec<u16> {
    let mut p = args.ports.clone();
    p.extend([443, 6443, 9345]);
    p.sort_unstable();
    p.dedup();
    p
}

/// The endpoints for kubeconfig server `server`: itself, or the upstreams of the proxy
/// listening on it when it is loopback (then with what was found there).
#[must_use]
pub fn through_proxy(args: &Settings, server: (String, u16)) -> (Vec<(String, u16)>, Option<Via>) {
    let Some(listen) = proxy::loopback(&server.0, server.1) else {
        return (vec![server], None);
    };
    let found = proxy::find(listen, &api_ports(args));
    let list = match &found {
        Ok(p) => p.upstreams.clone(),
        Err(_) => vec![server.clone()],
    };
    (list, Some(Via { server, found }))
}

/// The endpoints to follow for `list`, and the hop when `via` found a proxy (whose
/// follower is then started, inside the runtime).
#[must_use]
pub fn follow(
    args: &Settings,
    list: &[(String, u16)],
    via: Option<&Via>,
    wake: &Arc<Notify>,
) -> (Endpoints, Option<proxy::follow::Shared>) {
    let Some(via) = via else {
        return (Endpoints::new(list), None);
    };
    let resolver = || {
        Resolver::new(&args.dns_servers, &args.hosts_file)
            .inspect_err(|e| {
                tracing::warn!("{e:#}: names in the proxy's upstream list will not be resolved");
            })
            .ok()
    };
    let (endpoints, listen) = match &via.found {
        Ok(p) => {
            tracing::info!(target: "lifeline::endpoint", proxy = %p.name, pid = p.pid, cgroup = %p.cgroup,
                "{p}: the endpoint is the proxy's upstreams; their sockets are the endpoint's, kubelet's loopback socket is judged by stall and silence only");
            (proxy::follow::endpoints(p), p.listen)
        }
        Err(why) => {
            tracing::warn!(target: "lifeline::endpoint",
                "kubelet's API endpoint is loopback, but no proxy is identified there: {why}; kubelet's loopback socket is judged by stall and silence only, and the API servers behind it are not followed until a proxy is found there (looked for every {:?}; or name them with --endpoint)", proxy::follow::EVERY);
            let Some(listen) = proxy::loopback(&via.server.0, via.server.1) else {
                return (Endpoints::new(list), None);
            };
            (Endpoints::new(list), listen)
        }
    };
    let shared = proxy::follow::spawn(
        (listen, via.found.as_ref().ok().cloned()),
        endpoints.clone(),
        resolver(),
        api_ports(args),
        Arc::clone(wake),
    );
    (endpoints, Some(shared))
}
