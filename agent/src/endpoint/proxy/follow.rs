//! Following the proxy's upstream list at run time: its configuration is read again every
//! `EVERY` (a reload changes it, as DNS changes a name's answer), names in it are resolved as
//! the endpoint's are, and each port's set is updated: an upstream that left the list is
//! leaving, then orphaned after the grace, exactly as an address DNS stopped returning.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use super::Proxy;
use crate::endpoint::{EndpointSet, Endpoints, Resolver};

/// How often the proxy's configuration is read again.
pub const EVERY: Duration = Duration::from_secs(5);

/// The hop followed now (None: no proxy identified yet), shared with status.
pub type Shared = Arc<Mutex<Option<Proxy>>>;

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

/// The proxy's list now: read again, or the proxy found again on `listen` (a restarted
/// static pod, or one that was not there yet). `None`: nothing new; a lost proxy is warned
/// about once (`lost`).
fn look(
    was: Option<&Proxy>,
    listen: SocketAddr,
    api_ports: &[u16],
    lost: &mut bool,
) -> Option<Proxy> {
    if let Some(w) = was
        && let Some(ups) = super::reread(w, api_ports)
    {
        *lost = false;
        return Some(Proxy {
            upstreams: ups,
            ..w.clone()
        });
    }
    match (super::find(listen, api_ports), was) {
        (Ok(p), _) => {
            *lost = false;
            Some(p)
        }
        (Err(e), Some(w)) => {
            if !std::mem::replace(lost, true) {
                tracing::warn!(target: "lifeline::endpoint", "kubelet's proxy {} (pid {}) is gone: {e}; keeping its last upstreams", w.name, w.pid);
            }
            None
        }
        (Err(_), None) => None,
    }
}

/// A proxy found after start (lifeline started first): the loopback set becomes the
/// proxy's set on its first upstream port; another port is warned about by `update`.
fn adopt(endpoints: &Endpoints, p: &Proxy) {
    let Some(port) = p.upstreams.first().map(|(_, port)| *port) else {
        return;
    };
    for set in endpoints.sets() {
        let mut s = set.lock().unwrap_or_else(PoisonError::into_inner);
        if !s.proxied && s.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
            *s = EndpointSet::proxied(&p.name, port);
            tracing::info!(target: "lifeline::endpoint", proxy = %p.name, pid = p.pid,
                "{p}: found after start; the endpoint is now the proxy's upstreams");
            return;
        }
    }
}

/// Fills the sets now and every `EVERY` from the list of the proxy on `listen` (`proxy`:
/// found at start, or None: looked for again each time). Returns the hop as followed, for
/// status.
pub fn spawn(
    (listen, proxy): (SocketAddr, Option<Proxy>),
    endpoints: Endpoints,
    resolver: Option<Resolver>,
    api_ports: Vec<u16>,
    wake: Arc<Notify>,
) -> Shared {
    let shared: Shared = Arc::new(Mutex::new(proxy));
    let hop = Arc::clone(&shared);
    tokio::spawn(async move {
        let mut first = true;
        let (mut warned, mut lost) = (BTreeSet::new(), false);
        loop {
            let was = hop.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let now = match &was {
                Some(w) if first => Some(w.clone()),
                _ => look(was.as_ref(), listen, &api_ports, &mut lost),
            };
            first = false;
            if let Some(now) = now {
                match &was {
                    None => adopt(&endpoints, &now),
                    Some(w) if now.upstreams != w.upstreams || now.pid != w.pid => {
                        tracing::info!(target: "lifeline::endpoint", "{now} (was {w})");
                    }
                    Some(_) => {}
                }
                if update(&endpoints, &now.upstreams, resolver.as_ref(), &mut warned).await {
                    wake.notify_one();
                }
                *hop.lock().unwrap_or_else(PoisonError::into_inner) = Some(now);
            }
            tokio::time::sleep(EVERY).await;
        }
    });
    shared
}
