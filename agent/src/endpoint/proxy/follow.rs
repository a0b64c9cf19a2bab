//! Following the proxy's upstream list at run time: its configuration is read again every
//! `EVERY` (a reload changes it, as DNS changes a name's answer), names in it are resolved as
//! the endpoint's are, and each port's set is updated: an upstream that left the list is
//! leaving, then orphaned after the grace, exactly as an address DNS stopped returning.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::IpAddr,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use super::Proxy;
use crate::endpoint::{EndpointSet, Endpoints, Resolver};

/// How often the proxy's configuration is read again.
pub const EVERY: Duration = Duration::from_secs(5);

/// The hop followed now, shared with status.
pub type Shared = Arc<Mutex<Proxy>>;

/// One set per port of the upstreams (nginx's and haproxy's lists may mix ports; k3s
/// dials 6443 and RKE2's supervisor 9345), filled by `spawn`.
#[must_use]
pub fn endpoints(p: &Proxy) -> Endpoints {
    let ports: BTreeSet<u16> = p.upstreams.iter().map(|(_, port)| *port).collect();
    Endpoints {
        sets: ports
            .into_iter()
            .map(|port| Arc::new(Mutex::new(EndpointSet::proxied(&p.name, port))))
            .collect(),
        retargeted: Arc::default(),
    }
}

/// The addresses of `ups` by port; `Err` names the first name that did not resolve (the
/// sets are then left as they are: a DNS failure orphans nothing).
async fn addresses(
    ups: &[(String, u16)],
    resolver: Option<&Resolver>,
) -> Result<BTreeMap<u16, BTreeSet<IpAddr>>, String> {
    let mut out: BTreeMap<u16, BTreeSet<IpAddr>> = BTreeMap::new();
    for (host, port) in ups {
        let set = out.entry(*port).or_default();
        if let Ok(ip) = host.parse::<IpAddr>() {
            set.insert(ip);
            continue;
        }
        let Some(r) = resolver else {
            return Err(format!("{host}: no resolver"));
        };
        match r.resolve(host).await {
            Ok(a) => set.extend(a.addrs),
            Err(e) => return Err(format!("{host}: {e}")),
        }
    }
    Ok(out)
}

/// Updates the sets from `ups` now. Returns whether one changed. A port no set has (a
/// reload added it) is warned about once (`warned`): the probe's ports are fixed at start.
async fn update(
    endpoints: &Endpoints,
    ups: &[(String, u16)],
    resolver: Option<&Resolver>,
    warned: &mut BTreeSet<u16>,
) -> bool {
    let now = Instant::now();
    let by_port = addresses(ups, resolver).await;
    let ports: BTreeSet<u16> = endpoints
        .sets()
        .iter()
        .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).port)
        .collect();
    for p in by_port.iter().flat_map(BTreeMap::keys) {
        if !ports.contains(p) && warned.insert(*p) {
            tracing::warn!(target: "lifeline::endpoint", port = p,
                "kubelet's proxy now has upstreams on port {p}, which lifeline did not follow at start: its sockets there are not the endpoint's until lifeline restarts");
        }
    }
    let mut changed = false;
    for set in endpoints.sets() {
        let mut s = set.lock().unwrap_or_else(PoisonError::into_inner);
        if !s.proxied {
            continue;
        }
        match &by_port {
            Ok(m) => {
                let addrs = m.get(&s.port).cloned().unwrap_or_default();
                if s.update(addrs, now) {
                    let list: Vec<String> = s.current.iter().map(ToString::to_string).collect();
                    tracing::info!(target: "lifeline::endpoint", endpoint = %s.name, addrs = %list.join(","),
                        "the proxy's upstreams on port {} are now [{}]", s.port, list.join(", "));
                    changed = true;
                }
            }
            Err(e) => s.fail(e.clone(), now),
        }
    }
    changed
}

/// Fills the sets now and every `EVERY` from the proxy's list; the proxy found again when
/// its process is gone (a restarted static pod). Returns the hop as followed, for status.
pub fn spawn(
    proxy: Proxy,
    endpoints: Endpoints,
    resolver: Option<Resolver>,
    api_ports: Vec<u16>,
    wake: Arc<Notify>,
) -> Shared {
    let shared: Shared = Arc::new(Mutex::new(proxy));
    let hop = Arc::clone(&shared);
    tokio::spawn(async move {
        let mut first = true;
        let mut warned = BTreeSet::new();
        loop {
            let was = hop.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let now = if first {
                Some(was.clone())
            } else if let Some(ups) = super::reread(&was, &api_ports) {
                Some(Proxy {
                    upstreams: ups,
                    ..was.clone()
                })
            } else {
                super::find(was.listen, &api_ports)
                    .inspect_err(|e| {
                        tracing::warn!(target: "lifeline::endpoint", "kubelet's proxy {} (pid {}) is gone: {e}; keeping its last upstreams", was.name, was.pid);
                    })
                    .ok()
            };
            first = false;
            if let Some(now) = now {
                if now.upstreams != was.upstreams || now.pid != was.pid {
                    tracing::info!(target: "lifeline::endpoint", "{now} (was {was})");
                }
                if update(&endpoints, &now.upstreams, resolver.as_ref(), &mut warned).await {
                    wake.notify_one();
                }
                *hop.lock().unwrap_or_else(PoisonError::into_inner) = now;
            }
            tokio::time::sleep(EVERY).await;
        }
    });
    shared
}
