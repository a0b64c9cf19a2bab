//! The probe's unanswered-probe news through whole sweeps (`visit.rs`), against the fake
//! kernel: what each costs in `sock_diag` requests. At 100,000 idle sockets a probe or its
//! answer lost once is routine, so the first unanswered probe of a socket that is not an
//! endpoint's is the kernel's word alone; from the threshold on, and for an endpoint's
//! socket (its look asks the peer probe), it is read.

use std::time::Duration;

use lifeline_common::{
    Keepalive,
    news::{self, News},
};

use super::fake_world::{START, World, api, kubelet};
use crate::judge::{Judge, Seed, Settings, Silence, Stall};

/// The agent's default keepalive, armed on the socket too.
const KEEPALIVE: Keepalive = Keepalive {
    idle_s: 1,
    intvl_s: 1,
    cnt: 20,
    user_timeout_ms: 0,
};

/// The agent's defaults: the silent rule of 12 probes and 2.1 s, keepalive 1s,1s,20, and
/// the probe's news of unanswered probes.
fn judge() -> Judge {
    let mut j = Judge::new(
        Settings {
            stall: Stall::new(Duration::from_secs(10), 8),
            silent: Some(Silence {
                after: Duration::from_millis(2_100),
                probes: 12,
            }),
            want: KEEPALIVE,
            migrate: false,
            spread: Duration::from_mins(1),
            dry_run: false,
            max_kills_per_minute: 6,
            seed: Seed(1),
        },
        None,
    );
    j.set_unanswered_news(true);
    j
}

/// `sock_diag` requests the sweeps make once `probes_out` unanswered probes of `cookie` are
/// news, over one second.
async fn reads_after(w: &mut World, cookie: u64, probes_out: u32, until: u64) -> u64 {
    let before = w.kernel.host().gets;
    w.kernel.host().news.push(News {
        cookie,
        kind: news::UNANSWERED,
        arg: probes_out,
    });
    w.run_until(until).await;
    w.kernel.host().gets - before
}

fn idle_world(follow: bool) -> World {
    let mut w = World::new(6, follow);
    w.daemon.judge = judge();
    let mut rec = kubelet(40_001, api(10), START);
    rec.keepalive = KEEPALIVE;
    w.connect(1, rec);
    w
}

#[tokio::test(flavor = "current_thread")]
async fn a_first_unanswered_probe_is_not_read_and_the_threshold_is() {
    let mut w = idle_world(false);
    w.run_until(3).await;
    assert_eq!(reads_after(&mut w, 1, 1, 4).await, 0, "the kernel's word");
    assert!(
        reads_after(&mut w, 1, 10, 5).await >= 1,
        "the threshold: the silent rule may hold"
    );
    assert!(w.destroyed().is_empty(), "its tcp_info shows it answering");
}

#[tokio::test(flavor = "current_thread")]
async fn an_endpoint_sockets_first_unanswered_probe_is_read() {
    let mut w = idle_world(true);
    w.run_until(3).await;
    assert!(
        reads_after(&mut w, 1, 1, 4).await >= 1,
        "its look asks the peer probe"
    );
}
