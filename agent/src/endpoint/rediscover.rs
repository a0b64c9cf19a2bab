//! Re-discovery: kubelet restarted with another `--kubeconfig` moves the followed endpoint
//! at run time. Every few seconds the trusted kubelet is looked for again (a scan of /proc:
//! a few hundred small reads); another process than the one followed (a new pid or start
//! time) has its kubeconfig read, and a new server is followed from then on. While no
//! trusted kubelet runs (between a stop and a start) the endpoint stays as it is.

use std::{collections::HashSet, sync::Arc, time::Duration};

use tokio::sync::Notify;

use super::{
    Endpoints,
    discover::{self, Followed, Source},
    kubeconfig, proxy,
    trust::{Ignored, Trust},
};
use crate::settings::run::Endpoint as Settings;

/// How often kubelet is looked for: a restart moves the endpoint within this.
pub(super) const EVERY: Duration = Duration::from_secs(3);

pub(super) struct Rediscover {
    trust: Trust,
    followed: Followed,
    endpoints: Endpoints,
    /// Where the proxy follower looks (a loopback server is a local proxy's).
    steer: Option<proxy::follow::Steer>,
    /// The kubeconfig's server followed now.
    list: Vec<(String, u16)>,
    wake: Arc<Notify>,
    /// Processes already logged as ignored, or whose kubeconfig was unusable: once each.
    logged: HashSet<(u32, u64)>,
}

/// `(pid, start)` of a kubelet source.
fn process(s: &Source) -> Option<(u32, u64)> {
    match s {
        Source::Kubelet { pid, start, .. } => Some((*pid, *start)),
        _ => None,
    }
}

impl Rediscover {
    /// Follows `list` (from `followed`) into `endpoints`, a loopback server through the
    /// proxy follower `steer`; `wake` is the daemon's.
    #[must_use]
    pub(super) fn new(
        args: &Settings,
        (followed, list): (Followed, Vec<(String, u16)>),
        (endpoints, steer): (Endpoints, Option<proxy::follow::Steer>),
        wake: Arc<Notify>,
    ) -> Self {
        Self {
            trust: Trust::new(&args.trusted_cgroups),
            followed,
            endpoints,
            steer,
            list,
            wake,
            logged: HashSet::new(),
        }
    }

    /// Looks now, then every `EVERY`, until the runtime ends.
    pub(super) fn spawn(mut self) {
        tokio::spawn(async move {
            loop {
                self.look();
                tokio::time::sleep(EVERY).await;
            }
        });
    }

    /// One look: log untrusted kubelets once, follow a new trusted one's server.
    pub(super) fn look(&mut self) {
        let (found, ignored) = discover::kubelet_source(&self.trust);
        for i in ignored {
            if self.logged.insert((i.pid, i.start)) {
                log_ignored(&i);
            }
        }
        let Some(found) = found else { return };
        let now = self.followed.get();
        let Some(pid_start) = process(&found) else {
            return;
        };
        if process(&now) == Some(pid_start) {
            return;
        }
        let Some(file) = found.file() else { return };
        match kubeconfig::server(file) {
            Ok(server) if self.list == [server.clone()] => {
                tracing::info!(target: "lifeline::endpoint", source = %found,
                    "kubelet is now {found} (was {now}); the API endpoint {} is the same", super::names(&self.list));
                self.followed.set(found);
            }
            Ok(server) => {
                let was = super::names(&self.list);
                let loopback = proxy::loopback(&server.0, server.1);
                self.list = vec![server];
                let names = super::names(&self.list);
                // A local proxy's address: its follower finds the proxy serving kubelet's
                // connection there and moves the sets to its upstreams; until then the last
                // ones stay (kubelet has just restarted and may not be connected).
                if let (Some(listen), Some(steer)) = (loopback, &self.steer) {
                    steer.set(Some(listen));
                } else {
                    if let Some(steer) = &self.steer {
                        steer.set(None);
                    }
                    self.endpoints.retarget(&self.list);
                }
                tracing::info!(target: "lifeline::endpoint", source = %found, endpoint = %names, previous = %was,
                    "API endpoint {names} from {found}: kubelet restarted with another kubeconfig (was {was} from {now}); its port is watched from now on");
                self.followed.set(found);
                self.wake.notify_one();
            }
            Err(e) => {
                if self.logged.insert(pid_start) {
                    tracing::warn!(target: "lifeline::endpoint", source = %found,
                        "{e:#} (found as {found}); still following {} from {now}", super::names(&self.list));
                }
            }
        }
    }
}

/// One line naming the process and why it may not choose the endpoint.
pub(super) fn log_ignored(i: &Ignored) {
    tracing::warn!(target: "lifeline::endpoint", pid = i.pid, uid = %i.uid, cgroup = %i.cgroup, why = %i.why,
        "ignoring process {} named kubelet (uid {}, cgroup {:?}): {}; only a root kubelet in kubelet's cgroup chooses the API endpoint",
        i.pid, i.uid, i.cgroup, i.why);
}
