//! One task per DNS-named endpoint: resolve, update the set, sleep for the TTL (clamped),
//! and on failure keep the last good set, count, log, and retry sooner. A first sign of
//! trouble on one of its sockets resolves it at once (`early.rs`); an early failure keeps
//! the schedule it interrupted.

use std::{
    sync::{Arc, PoisonError},
    time::{Duration, Instant},
};

use prometheus_client::metrics::counter::Counter;
use tokio::sync::Notify;

use super::{Endpoints, Resolver};

/// `--min-refresh` / `--max-refresh`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Refresh {
    pub min: Duration,
    pub max: Duration,
}

/// Spawns the refresh tasks; they end with the runtime. A fixed set (an IP literal) needs
/// none, unless re-discovery may point it at a name (`retargetable`): its task then waits
/// for `Endpoints::retarget`. `failures` counts the failed resolutions (a metric).
pub(crate) fn spawn_refreshers(
    endpoints: &Endpoints,
    resolver: Resolver,
    refresh: Refresh,
    wake: &Arc<Notify>,
    retargetable: bool,
    failures: &Counter,
) {
    let resolver = Arc::new(resolver);
    for set in &endpoints.sets() {
        {
            let s = set.lock().unwrap_or_else(PoisonError::into_inner);
            // A proxy's upstreams are its follower's; re-discovery may make its set a plain one.
            if !retargetable && (s.proxied || s.fixed) {
                continue;
            }
        }
        let (set, resolver, wake) = (Arc::clone(set), Arc::clone(&resolver), Arc::clone(wake));
        let retargeted = Arc::clone(endpoints.retargeted());
        let failed = failures.clone();
        tokio::spawn(async move {
            let mut retry = refresh.min;
            // Whether this turn was asked for early, and when the regular one is due.
            let (mut early, mut due) = (false, Instant::now());
            loop {
                // Registered before the set is read: a retarget from here on ends the wait.
                let notified = retargeted.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let (host, name, fixed, asked) = {
                    let s = set.lock().unwrap_or_else(PoisonError::into_inner);
                    // A set that became a proxy's (found after start) is its follower's.
                    (
                        s.host.clone(),
                        s.name.clone(),
                        s.fixed || s.proxied,
                        s.early.waker(),
                    )
                };
                if fixed {
                    notified.await;
                    continue;
                }
                let result = resolver.resolve(&host).await;
                let now = Instant::now();
                if set.lock().unwrap_or_else(PoisonError::into_inner).host != host {
                    (retry, early) = (refresh.min, false);
                    continue; // retargeted meanwhile: this answer is the old name's
                }
                let wait = match result {
                    Ok(answer) => {
                        let changed = set
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .update(answer.addrs.clone(), now);
                        let addrs: Vec<String> =
                            answer.addrs.iter().map(ToString::to_string).collect();
                        let ttl_ms = u64::try_from(answer.ttl.as_millis()).unwrap_or(u64::MAX);
                        if changed {
                            tracing::info!(target: "lifeline::endpoint", endpoint = %name, addrs = %addrs.join(","), ttl_ms, changed, early, from = answer.from.label(), "endpoint resolved");
                            wake.notify_one();
                        } else {
                            tracing::debug!(target: "lifeline::endpoint", endpoint = %name, addrs = %addrs.join(","), ttl_ms, changed, from = answer.from.label(), "endpoint resolved");
                        }
                        retry = refresh.min;
                        answer.ttl.clamp(refresh.min, refresh.max)
                    }
                    Err(e) if early => {
                        set.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .fail(e.to_string(), now);
                        failed.inc();
                        tracing::warn!(target: "lifeline::endpoint", endpoint = %name, error = %e,
                            "DNS failure on an early re-resolve; keeping the last good set and the schedule");
                        due.saturating_duration_since(now)
                    }
                    Err(e) => {
                        let failures = {
                            let mut s = set.lock().unwrap_or_else(PoisonError::into_inner);
                            s.fail(e.to_string(), now);
                            s.failures
                        };
                        failed.inc();
                        tracing::warn!(target: "lifeline::endpoint", endpoint = %name, error = %e, failures,
                            "DNS failure; keeping the last good set");
                        let wait = retry;
                        retry = (retry * 2).min(refresh.max).min(Duration::from_secs(30));
                        wait
                    }
                };
                due = now + wait;
                early = false;
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = &mut notified => retry = refresh.min,
                    () = asked.notified() => early = true,
                }
            }
        });
    }
}
