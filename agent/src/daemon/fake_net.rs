//! The network of the sweep tests: the path to the endpoint `api.test:6443` (two
//! addresses), which the test cuts and restores; the peer probes' and the guard's connects
//! go through it.

use std::{
    collections::BTreeSet,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use super::{
    fake::Fake,
    fake_world::{API, api},
};
use crate::endpoint::{
    EndpointSet, Endpoints, Follow, Guard, Prober,
    connect::{Connect, ConnectAnswer, Connecting},
    discover::{Followed, Source},
};

/// The path to the endpoint: every connect is accepted, or none is answered.
#[derive(Default)]
pub(super) struct Net {
    pub down: AtomicBool,
}

impl Connect for Net {
    fn probe(&self, _peer: SocketAddr) -> Connecting<ConnectAnswer> {
        let down = self.down.load(Ordering::SeqCst);
        Box::pin(async move {
            if down {
                ConnectAnswer::TimedOut
            } else {
                ConnectAnswer::Accepted
            }
        })
    }

    fn any_accepts(&self, targets: Vec<SocketAddr>) -> Connecting<Option<SocketAddr>> {
        let down = self.down.load(Ordering::SeqCst);
        Box::pin(async move { targets.first().copied().filter(|_| !down) })
    }
}

/// The endpoint `api.test:6443` at two addresses, probed and guarded through `Net`.
pub(super) fn following(clock: &Fake, net: &Arc<Net>) -> Follow {
    let set = Arc::new(Mutex::new(EndpointSet::new("api.test", API)));
    if let Ok(mut s) = set.lock() {
        s.update(BTreeSet::from([api(10).ip(), api(11).ip()]), Instant::now());
    }
    let connect: Arc<dyn Connect> = net.clone();
    Follow {
        source: Followed::new(Source::EndpointFlag),
        endpoints: Endpoints::of(vec![set]),
        prober: Prober::new(
            Arc::new(Notify::new()),
            Arc::new(clock.clone()),
            connect.clone(),
        ),
        guard: Guard::default(),
        connect,
        grace: Duration::from_mins(1),
        hop: None,
        steer: None,
    }
}
