//! One daemon on the fake kernel (`fake.rs`), with the metrics an operator reads and,
//! when it follows the endpoint, the fake network (`fake_net.rs`).

use std::{
    collections::HashSet,
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use lifeline_common::{Keepalive, watch::BY_COMM};
use tokio::sync::watch;

use super::{
    Daemon, Parts,
    defer::Deferrals,
    fake::{Fake, Sock},
    fake_net::{Net, following},
};
use crate::{
    judge::{Cookie, Judge, Mono, Record, Seed, Settings, Silence, Stall, TcpState},
    report::{metrics::Metrics, status::Snapshot},
};

/// The sweep interval: the loop sweeps at least this often.
const INTERVAL: Duration = Duration::from_secs(1);
/// The endpoint's port.
pub(super) const API: u16 = 6443;
/// The fake clock at the daemon's start (well after boot: adopted sockets are older).
pub(super) const START: Mono = Mono::from_secs(1_000);

pub(super) struct World {
    pub kernel: Fake,
    pub net: Arc<Net>,
    pub daemon: Daemon,
    metrics: Metrics,
}

/// An endpoint address (TEST-NET-1).
pub(super) fn api(d: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::from([192, 0, 2, d]), API)
}

/// kubelet's connection from local port `port` to `peer`, established at `at`.
pub(super) fn kubelet(port: u16, peer: SocketAddr, at: Mono) -> Record {
    let mut r = Record {
        local: SocketAddr::new(IpAddr::from([10, 0, 0, 1]), port),
        peer,
        state: TcpState::Established,
        established: at,
        last_ack: at,
        reasons: BY_COMM,
        owner_pid: 4242,
        ..Record::default()
    };
    r.owner_comm.0[..7].copy_from_slice(b"kubelet");
    r
}

impl World {
    /// A daemon at `START` with `budget` kills a minute; following the endpoint at
    /// `api(10)` and `api(11)` when `follow`.
    pub(super) fn new(budget: u32, follow: bool) -> Self {
        Self::with(budget, follow, |s| s)
    }

    /// As `new`, with lifeline's keepalive (1s,1s,20) wanted and the silent rule at its
    /// defaults (12 probes, nothing from the peer for 2 s).
    pub(super) fn armed(follow: bool) -> Self {
        Self::with(6, follow, |s| Settings {
            silent: Some(Silence {
                after: Duration::from_secs(2),
                probes: 12,
            }),
            want: Keepalive {
                idle_s: 1,
                intvl_s: 1,
                cnt: 20,
                user_timeout_ms: 0,
            },
            ..s
        })
    }

    fn with(budget: u32, follow: bool, change: impl FnOnce(Settings) -> Settings) -> Self {
        let kernel = Fake::default();
        kernel.host().now = START;
        let net = Arc::new(Net::default());
        let metrics = Metrics::new();
        let settings = Settings {
            stall: Stall::new(Duration::from_secs(10), 8),
            silent: None,
            want: Keepalive::default(),
            migrate: false,
            spread: Duration::from_mins(1),
            dry_run: false,
            max_kills_per_minute: budget,
            seed: Seed(1),
        };
        let settings = change(settings);
        let daemon = Daemon::new(Parts {
            kernel: Box::new(kernel.clone()),
            polled: HashSet::new(),
            judge: Judge::new(settings, None),
            clock: Arc::new(kernel.clone()),
            status: watch::channel(Snapshot::default()).0,
            restarts: None,
            follow: follow.then(|| following(&kernel, &net)),
            counts: metrics.counts(),
            defer: Deferrals::new(false, false, 2),
        });
        Self {
            kernel,
            net,
            daemon,
            metrics,
        }
    }

    /// A socket the probe saw at ESTABLISHED (its news is queued).
    pub(super) fn connect(&self, cookie: u64, rec: Record) {
        let mut h = self.kernel.host();
        h.socks.insert(Cookie(cookie), Sock::new(rec, true));
        h.news.push(lifeline_common::news::News {
            cookie,
            kind: lifeline_common::news::ESTABLISHED,
            arg: 0,
        });
    }

    /// The peer of `cookie` stops answering now (data in flight), or answers again.
    pub(super) fn silent(&self, cookie: u64, silent: bool) {
        let mut h = self.kernel.host();
        let now = h.now;
        if let Some(s) = h.socks.get_mut(&Cookie(cookie)) {
            s.silent(silent, now);
        }
    }

    /// Sweeps, as the loop does, until `secs` seconds past `START`: each at the moment the
    /// last one asked for (at most the interval), the peer probes it started answered.
    pub(super) async fn run_until(&mut self, secs: u64) {
        let until = START + Duration::from_secs(secs);
        while self.kernel.host().now < until {
            let wake = self
                .daemon
                .sweep(INTERVAL)
                .await
                .expect("the fake's maps read");
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
            let mut h = self.kernel.host();
            h.now = h.now + wake.clamp(Duration::from_millis(10), INTERVAL);
        }
    }

    pub(super) fn destroyed(&self) -> Vec<u64> {
        self.kernel.host().destroyed.iter().map(|c| c.0).collect()
    }

    /// The decisions counted with these labels (`lifeline_decisions_total`).
    pub(super) fn decisions(&self, verdict: &str, action: &str, outcome: &str) -> u64 {
        let series = format!(
            "lifeline_decisions_total{{verdict=\"{verdict}\",action=\"{action}\",outcome=\"{outcome}\"}} "
        );
        self.metrics
            .encode()
            .lines()
            .find_map(|l| l.strip_prefix(&series)?.parse().ok())
            .unwrap_or(0)
    }

    /// What the last sweep published (`lifeline status`'s summary).
    pub(super) fn published(&self) -> Snapshot {
        self.daemon.published().clone()
    }
}
