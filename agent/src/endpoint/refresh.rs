//! One task per DNS-named endpoint: resolve, update the set, sleep for the TTL (clamped),
//! and on failure keep the last good set, count, log, and retry sooner.

use std::{
    sync::{Arc, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use super::{Endpoints, Resolver};

/// `--min-refresh` / `--max-refresh`.
#[derive(Clone, Copy, Debug)]
pub struct Refresh {
    pub min: Duration,
    pub max: Duration,
}

/// Spawns the refresh tasks; they end with the runtime.
pub fn spawn_refreshers(
    endpoints: &Endpoints,
    resolver: Resolver,
    refresh: Refresh,
    wake: &Arc<Notify>,
) {
    let resolver = Arc::new(resolver);
    for set in endpoints.sets() {
        let (host, name) = {
            let s = set.lock().unwrap_or_else(PoisonError::into_inner);
            if s.fixed {
                continue;
            }
            (s.host.clone(), s.name.clone())
        };
        let (set, resolver, wake) = (Arc::clone(set), Arc::clone(&resolver), Arc::clone(wake));
        tokio::spawn(async move {
            let mut retry = refresh.min;
            loop {
                let result = resolver.resolve(&host).await;
                let now = Instant::now();
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
                            tracing::info!(target: "lifeline::endpoint", endpoint = %name, addrs = %addrs.join(","), ttl_ms, changed, from = answer.from.label(), "endpoint resolved");
                            wake.notify_one();
                        } else {
                            tracing::debug!(target: "lifeline::endpoint", endpoint = %name, addrs = %addrs.join(","), ttl_ms, changed, from = answer.from.label(), "endpoint resolved");
                        }
                        retry = refresh.min;
                        answer.ttl.clamp(refresh.min, refresh.max)
                    }
                    Err(e) => {
                        let failures = {
                            let mut s = set.lock().unwrap_or_else(PoisonError::into_inner);
                            s.fail(e.to_string(), now);
                            s.failures
                        };
                        crate::metrics::get().dns_failure();
                        tracing::warn!(target: "lifeline::endpoint", endpoint = %name, error = %e, failures,
                            "DNS failure; keeping the last good set");
                        let wait = retry;
                        retry = (retry * 2).min(refresh.max).min(Duration::from_secs(30));
                        wait
                    }
                };
                tokio::time::sleep(wait).await;
            }
        });
    }
}
