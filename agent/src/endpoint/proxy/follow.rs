//! Following the proxy's upstream list at run time: every `EVERY` (or at once when
//! re-discovery steers it to another loopback address) the proxy's identity is checked and
//! its configuration read again (a reload changes it, as DNS changes a name's answer), off
//! the loop's thread with a deadline (`blocking.rs`); names in it are resolved as the
//! endpoint's are, and each port's set is updated (a port new since the last read gets a set
//! of its own): an upstream that left the list is leaving, then orphaned after the grace,
//! exactly as an address DNS stopped returning. A failed read keeps the last good list.

use std::{
    collections::{BTreeMap, BTreeSet, HashSet},
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use super::{Proxy, Reread, blocking};
use crate::endpoint::{EndpointSet, Endpoints, Resolver, trust::Trust};

/// How often the proxy's configuration is read again.
pub(crate) const EVERY: Duration = Duration::from_secs(5);

/// The hop followed now (None: no proxy identified yet), shared with status.
pub(crate) type Shared = Arc<Mutex<Option<Proxy>>>;

/// Where kubelet's endpoint is (a loopback address: a proxy is looked for there; None:
/// kubelet names no local proxy now), set by re-discovery; the follower wakes on a change.
#[derive(Clone, Default)]
pub(crate) struct Steer {
    listen: Arc<Mutex<Option<SocketAddr>>>,
    changed: Arc<Notify>,
}

impl Steer {
    #[must_use]
    pub(crate) fn listen(&self) -> Option<SocketAddr> {
        *self.listen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set(&self, listen: Option<SocketAddr>) {
        *self.listen.lock().unwrap_or_else(PoisonError::into_inner) = listen;
        self.changed.notify_one();
    }
}

/// One set per port of the upstreams (nginx's and haproxy's lists may mix ports; k3s
/// dials 6443 and RKE2's supervisor 9345), filled by `spawn`.
#[must_use]
pub(crate) fn endpoints(p: &Proxy) -> Endpoints {
    let ports: BTreeSet<u16> = p.upstreams.iter().map(|(_, port)| *port).collect();
    Endpoints::of(
        ports
            .into_iter()
            .map(|port| Arc::new(Mutex::new(EndpointSet::proxied(&p.name, port))))
            .collect(),
    )
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

/// The proxy's set for `port`: its own, else a set kubelet's endpoint had before a proxy
/// was found (the loopback one, or a direct one kubelet left for the proxy), else a new
/// one. None when no set can be added (`MAX_SETS`).
fn set_for(endpoints: &Endpoints, p: &Proxy, port: u16) -> Option<Arc<Mutex<EndpointSet>>> {
    let sets = endpoints.sets();
    let lock =
        |s: &Arc<Mutex<EndpointSet>>| s.lock().unwrap_or_else(PoisonError::into_inner).proxied;
    if let Some(s) = sets.iter().find(|s| {
        let g = s.lock().unwrap_or_else(PoisonError::into_inner);
        g.proxied && g.port == port
    }) {
        return Some(Arc::clone(s));
    }
    if let Some(s) = sets.iter().find(|s| !lock(s)) {
        *s.lock().unwrap_or_else(PoisonError::into_inner) = EndpointSet::proxied(&p.name, port);
        tracing::info!(target: "lifeline::endpoint", proxy = %p.name, pid = p.pid,
            "{p}: the endpoint is now the proxy's upstreams on port {port}");
        return Some(Arc::clone(s));
    }
    let added = endpoints.add(EndpointSet::proxied(&p.name, port));
    if added.is_some() {
        tracing::info!(target: "lifeline::endpoint", port,
            "kubelet's proxy now has upstreams on port {port}: followed as {}-upstreams:{port}", p.name);
    } else {
        tracing::warn!(target: "lifeline::endpoint", port,
            "kubelet's proxy now has upstreams on port {port}, but lifeline follows {} endpoint sets already: not followed", crate::endpoint::MAX_SETS);
    }
    added
}

/// Updates the sets from `p`'s upstreams now. Returns whether one changed.
async fn update(endpoints: &Endpoints, p: &Proxy, resolver: Option<&Resolver>) -> bool {
    let now = Instant::now();
    let by_port = addresses(&p.upstreams, resolver).await;
    let mut changed = false;
    let ports: BTreeSet<u16> = p.upstreams.iter().map(|(_, port)| *port).collect();
    let mut sets: Vec<Arc<Mutex<EndpointSet>>> = ports
        .iter()
        .filter_map(|port| set_for(endpoints, p, *port))
        .collect();
    // A port the list no longer has: its set empties (its upstreams leave, as on a reload).
    sets.extend(endpoints.sets().into_iter().filter(|s| {
        let g = s.lock().unwrap_or_else(PoisonError::into_inner);
        g.proxied && !ports.contains(&g.port)
    }));
    for set in sets {
        let mut s = set.lock().unwrap_or_else(PoisonError::into_inner);
        match &by_port {
            Ok(m) => {
                let addrs = m.get(&s.port).cloned().unwrap_or_default();
                // The list's own addresses came from no DNS: they arm at once (`arming.rs`).
                let port = s.port;
                s.literals(
                    p.upstreams.iter().filter_map(|(h, p)| {
                        (*p == port).then(|| h.parse::<IpAddr>().ok()).flatten()
                    }),
                );
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

/// What one look found.
enum Step {
    /// The proxy (the same one with its list read again, or found anew).
    Proxy(Proxy),
    /// The same proxy, its list not readable now: the last good list stays.
    Failed(String),
    /// No proxy now (why).
    Lost(String),
}

/// One look (on a blocking thread): `was` checked and read again, else the proxy found
/// again from kubelet's connection. Returns the step and lines to log once.
fn look(
    was: Option<Proxy>,
    listen: SocketAddr,
    api_ports: &[u16],
    trust: &Trust,
) -> (Step, Vec<String>) {
    let kubelet: HashSet<crate::kernel::diag::CgroupId> = trust.ids();
    let mut lines = Vec::new();
    if let Some(w) = was {
        match super::reread(&w, api_ports, &kubelet) {
            Reread::Upstreams(ups) => {
                return (
                    Step::Proxy(Proxy {
                        upstreams: ups,
                        ..w
                    }),
                    lines,
                );
            }
            Reread::Failed(why) => return (Step::Failed(format!("{w}: {why}")), lines),
            Reread::Changed(why) => lines.push(format!(
                "{} (pid {}) is no longer kubelet's proxy: {why}; looking for the process serving kubelet's connection",
                w.name, w.pid
            )),
        }
    }
    let found = super::find(listen, api_ports, &kubelet);
    lines.extend(found.refused);
    match found.found {
        Ok(p) => (Step::Proxy(p), lines),
        Err(e) => (Step::Lost(e), lines),
    }
}

/// Logs `line` unless it was logged already (a refusal is one line, not one every look).
fn once(logged: &mut HashSet<String>, line: &str) {
    if logged.len() > 1024 {
        logged.clear();
    }
    if logged.insert(line.to_owned()) {
        tracing::warn!(target: "lifeline::endpoint", "{line}");
    }
}

/// The follower's inputs.
pub(crate) struct Inputs {
    pub steer: Steer,
    pub proxy: Option<Proxy>,
    pub trust: Trust,
    pub api_ports: Vec<u16>,
    pub resolver: Option<Resolver>,
}

/// Fills the sets now and every `EVERY` from the list of the proxy kubelet's connection to
/// the steered address reaches (`proxy`: found at start, or None: looked for each time).
/// Returns the hop as followed, for status.
pub(crate) fn spawn(inputs: Inputs, endpoints: Endpoints, wake: Arc<Notify>) -> Shared {
    let Inputs {
        steer,
        proxy,
        trust,
        api_ports,
        resolver,
    } = inputs;
    let shared: Shared = Arc::new(Mutex::new(proxy));
    let hop = Arc::clone(&shared);
    tokio::spawn(async move {
        let mut first = true;
        let mut logged = HashSet::new();
        loop {
            let was = hop.lock().unwrap_or_else(PoisonError::into_inner).clone();
            if let Some(listen) = steer.listen() {
                let was = was.filter(|w| w.listen == listen);
                let step = match &was {
                    Some(w) if first => Ok((Step::Proxy(w.clone()), Vec::new())),
                    _ => {
                        let (trust, ports) = (trust.clone(), api_ports.clone());
                        let w = was.clone();
                        blocking::run(move || look(w, listen, &ports, &trust)).await
                    }
                };
                let step = match step {
                    Ok((step, lines)) => {
                        for l in &lines {
                            once(&mut logged, l);
                        }
                        step
                    }
                    Err(late) => Step::Failed(late.to_string()),
                };
                match step {
                    Step::Proxy(now) => {
                        if was
                            .as_ref()
                            .is_none_or(|w| now.upstreams != w.upstreams || now.pid != w.pid)
                        {
                            tracing::info!(target: "lifeline::endpoint", "{now}{}",
                                was.as_ref().map_or_else(|| " (found)".to_owned(), |w| format!(" (was {w})")));
                        }
                        if update(&endpoints, &now, resolver.as_ref()).await {
                            wake.notify_one();
                        }
                        *hop.lock().unwrap_or_else(PoisonError::into_inner) = Some(now);
                    }
                    Step::Failed(why) => once(
                        &mut logged,
                        &format!(
                            "cannot read kubelet's proxy's upstreams now: {why}; keeping its last good list"
                        ),
                    ),
                    Step::Lost(why) => {
                        let kept = if was.is_some() {
                            "; keeping its last upstreams"
                        } else {
                            ""
                        };
                        once(
                            &mut logged,
                            &format!("no proxy identified on {listen}: {why}{kept}"),
                        );
                    }
                }
            }
            first = false;
            tokio::select! {
                () = tokio::time::sleep(EVERY) => {}
                () = steer.changed.notified() => {}
            }
        }
    });
    shared
}
