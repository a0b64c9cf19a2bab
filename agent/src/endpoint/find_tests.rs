//! The peer probe tries the endpoint's other addresses while its own tries are out: a
//! socket waiting to know whether the path works learns it from the first acceptance, not
//! when the last try of a dead peer times out. The peer's tries here answer only when the
//! test lets them, so every order is forced, not raced.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::sync::{Notify, mpsc};

use super::{
    Prober,
    connect::{Connect, ConnectAnswer, Connecting},
    find::{Finding, find},
};
use crate::{judge::PeerProbe, kernel::clock};

const PEER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10)), 6443);
const OTHER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 11)), 6443);

/// The peer answers `reach` once released; the other addresses accept when `others_up`.
struct Held {
    release: Arc<Notify>,
    reach: ConnectAnswer,
    others_up: AtomicBool,
    probed: Mutex<Vec<SocketAddr>>,
}

impl Held {
    fn new(reach: ConnectAnswer, others_up: bool) -> Arc<Self> {
        Arc::new(Self {
            release: Arc::new(Notify::new()),
            reach,
            others_up: AtomicBool::new(others_up),
            probed: Mutex::default(),
        })
    }
}

impl Connect for Held {
    fn probe(&self, peer: SocketAddr) -> Connecting<ConnectAnswer> {
        if let Ok(mut p) = self.probed.lock() {
            p.push(peer);
        }
        let (release, reach) = (self.release.clone(), self.reach);
        Box::pin(async move {
            release.notified().await;
            reach
        })
    }

    fn any_accepts(&self, targets: Vec<SocketAddr>) -> Connecting<Option<SocketAddr>> {
        let up = self.others_up.load(Ordering::SeqCst);
        Box::pin(async move { targets.first().copied().filter(|_| up) })
    }
}

/// `f`, or a failed test after 10 s: a wait here never hangs the suite.
async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    let waited = tokio::time::timeout(std::time::Duration::from_secs(10), f).await;
    waited.unwrap_or_else(|elapsed| panic!("still waiting: {elapsed}"))
}

/// Runs `find` for `PEER` (the endpoint: `PEER` and `OTHER`) on `net`; the receiver gets the
/// address that accepted, the moment `works` is told.
fn start(
    net: &Arc<Held>,
) -> (
    tokio::task::JoinHandle<Finding>,
    mpsc::UnboundedReceiver<SocketAddr>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let net = net.clone();
    let task = tokio::spawn(async move {
        let works = move |via| {
            let _ = tx.send(via);
        };
        find(net.as_ref(), PEER, vec![PEER, OTHER], works).await
    });
    (task, rx)
}

#[tokio::test(flavor = "current_thread")]
async fn another_address_accepting_is_told_before_the_peer_times_out() {
    let net = Held::new(ConnectAnswer::TimedOut, true);
    let (task, mut works) = start(&net);
    // The peer's tries are still held: the path is known to work already.
    assert_eq!(within(works.recv()).await, Some(OTHER));
    assert!(!task.is_finished(), "told only once the peer answered");
    net.release.notify_one();
    assert_eq!(within(task).await.ok(), Some(Finding::Dead));
    assert_eq!(net.probed.lock().map(|p| p.clone()).ok(), Some(vec![PEER]));
}

#[tokio::test(flavor = "current_thread")]
async fn no_address_accepting_is_the_path_and_never_tells_that_it_works() {
    let net = Held::new(ConnectAnswer::TimedOut, false);
    let (task, mut works) = start(&net);
    net.release.notify_one();
    assert_eq!(within(task).await.ok(), Some(Finding::PathDown));
    assert_eq!(
        within(works.recv()).await,
        None,
        "nothing accepted: the path was never working"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_peer_answering_is_its_finding_whatever_the_others_do() {
    for (reach, want) in [
        (ConnectAnswer::Accepted, Finding::Alive),
        (ConnectAnswer::Refused, Finding::Refused),
        (ConnectAnswer::Failed, Finding::Failed),
    ] {
        for others_up in [true, false] {
            let net = Held::new(reach, others_up);
            let (task, _works) = start(&net);
            net.release.notify_one();
            assert_eq!(
                within(task).await.ok(),
                Some(want),
                "{reach:?}, others up: {others_up}"
            );
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_prober_says_the_path_works_while_the_peer_is_still_tried() {
    let net = Held::new(ConnectAnswer::TimedOut, true);
    let wake = Arc::new(Notify::new());
    let connect: Arc<dyn Connect> = net.clone();
    let prober = Prober::new(wake.clone(), clock::system(), connect);
    let ask = crate::judge::ProbeAsk {
        why: "test",
        after: None,
    };
    prober.request(PEER, ask, vec![PEER, OTHER]);
    assert!(matches!(
        prober.finding(PEER),
        Some(PeerProbe::Running { .. })
    ));
    // Woken by the other address's acceptance, with the peer's tries still out.
    within(wake.notified()).await;
    assert!(matches!(
        prober.finding(PEER),
        Some(PeerProbe::PathWorks { .. })
    ));
    let works = prober.take_path_works();
    assert_eq!(
        works.iter().map(|w| (w.peer, w.via)).collect::<Vec<_>>(),
        [(PEER, OTHER)]
    );
    assert!(prober.take_path_works().is_empty(), "taken once");
    net.release.notify_one();
    within(wake.notified()).await;
    assert!(matches!(prober.finding(PEER), Some(PeerProbe::Dead(_))));
}

#[tokio::test(flavor = "current_thread")]
async fn a_dead_finding_stands_while_a_later_episode_probes_again() {
    let net = Held::new(ConnectAnswer::TimedOut, true);
    let wake = Arc::new(Notify::new());
    let connect: Arc<dyn Connect> = net.clone();
    let clock = clock::system();
    let prober = Prober::new(wake.clone(), clock.clone(), connect);
    let ask = |after| crate::judge::ProbeAsk { why: "test", after };
    prober.request(PEER, ask(None), vec![PEER, OTHER]);
    within(wake.notified()).await; // the other address accepted
    net.release.notify_one();
    within(wake.notified()).await; // every try of the peer timed out
    let Some(PeerProbe::Dead(first)) = prober.finding(PEER) else {
        panic!("dead: {:?}", prober.finding(PEER));
    };
    // A trouble episode that began after that probe asks for one of its own.
    let later = clock.now() + crate::judge::SLACK + std::time::Duration::from_millis(1);
    prober.request(PEER, ask(Some(later)), vec![PEER, OTHER]);
    tokio::task::yield_now().await; // its task makes the tries
    assert_eq!(
        net.probed.lock().map(|p| p.len()).ok(),
        Some(2),
        "probed again"
    );
    // Its tries are out (the other address accepted again): the first finding still speaks.
    assert_eq!(prober.finding(PEER), Some(PeerProbe::Dead(first)));
    assert_eq!(prober.dead(PEER), Some(first));
    assert_eq!(
        prober.take_path_works().len(),
        2,
        "both probes saw the path work"
    );
}

/// A live peer's finding (the usual one on a lossy path) wakes only `found`: the loop takes
/// it without a sweep. A finding the judge must act on at once (the path down) wakes the
/// sweep. A permit either notice holds is seen at the first poll, so "not woken" is exact.
#[tokio::test(flavor = "current_thread")]
async fn only_findings_that_change_a_verdict_wake_the_sweep() {
    let zero = std::time::Duration::ZERO;
    for (reach, sweeps) in [
        (ConnectAnswer::Accepted, false),
        (ConnectAnswer::Refused, false),
        (ConnectAnswer::TimedOut, true),
    ] {
        let net = Held::new(reach, false);
        let wake = Arc::new(Notify::new());
        let connect: Arc<dyn Connect> = net.clone();
        let prober = Prober::new(wake.clone(), clock::system(), connect);
        let found = prober.found();
        let ask = crate::judge::ProbeAsk {
            why: "test",
            after: None,
        };
        prober.request(PEER, ask, vec![PEER, OTHER]);
        tokio::task::yield_now().await; // its task makes the tries
        net.release.notify_one();
        let (woken, other) = if sweeps {
            (&wake, &found)
        } else {
            (&found, &wake)
        };
        within(woken.notified()).await;
        assert!(
            tokio::time::timeout(zero, other.notified()).await.is_err(),
            "{reach:?}: both notices woken"
        );
        let path_down = prober.take_path_down().is_some();
        assert_eq!(path_down, sweeps, "{reach:?}");
    }
}
