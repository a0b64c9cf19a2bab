//! The fast probes' passes against the fake kernel (`fast.rs`): a phase whose socket has
//! been answered since is closed with one `sock_diag` read and no pass over the TCP hash; a
//! phase with a probe still unanswered gets its pass; an endpoint socket's first probe
//! found overdue opens its phase at that look.

use std::time::Duration;

use lifeline_common::{
    Keepalive,
    news::{self, News},
};

use super::fake_world::{START, World, api, kubelet};
use crate::judge::{Cookie, Record};

/// One idle socket in kubelet's cgroup with fast probes at 200 ms; its first keepalive
/// probe has gone unanswered: the probe opened its phase and told the agent.
async fn phase_open() -> World {
    let w = World::new(6, false);
    w.kernel.host().fast = Some(Duration::from_millis(200));
    w.connect(1, kubelet(40_001, api(10), START));
    let mut w = w;
    w.run_until(2).await;
    kernel_opens(&w, 1);
    w.run_until(3).await;
    assert!(w.daemon.fast_due().is_some(), "the phase is open");
    w
}

/// `cookie`'s first keepalive probe goes unanswered: the probe opens its phase and tells the
/// agent (`agent-ebpf/src/unanswered.rs`).
fn kernel_opens(w: &World, cookie: u64) {
    let mut h = w.kernel.host();
    h.poke.insert(Cookie(cookie));
    if let Some(s) = h.socks.get_mut(&Cookie(cookie)) {
        s.probes_out = 1;
    }
    h.news.push(News {
        cookie,
        kind: news::UNANSWERED,
        arg: 1,
    });
}

#[tokio::test(flavor = "current_thread")]
async fn an_answered_phase_closes_with_one_read_and_no_pass() {
    let mut w = phase_open().await;
    // The next probe was answered: `icsk_probes_out` is 0 again.
    if let Some(s) = w.kernel.host().socks.get_mut(&Cookie(1)) {
        s.probes_out = 0;
    }
    let gets = w.kernel.host().gets;
    w.daemon.fast_pass();
    let h = w.kernel.host();
    assert_eq!(h.passes, 0, "no walk over the TCP hash");
    assert_eq!(h.gets - gets, 1, "one read of the socket");
    assert!(!h.poke.contains(&Cookie(1)), "the probe's phase closed");
    drop(h);
    assert_eq!(w.daemon.fast_due(), None, "no pass due");
}

#[tokio::test(flavor = "current_thread")]
async fn an_unanswered_phase_gets_its_pass() {
    let mut w = phase_open().await;
    w.daemon.fast_pass();
    let h = w.kernel.host();
    assert_eq!(h.passes, 1, "the pass pokes the next probe");
    assert!(h.poke.contains(&Cookie(1)), "still open: still unanswered");
    drop(h);
    assert!(w.daemon.fast_due().is_some(), "the next pass is due");
}

/// kubelet's idle connection to the followed endpoint, lifeline's keepalive (1 s) in force,
/// with `probes_out` keepalive probes unanswered from the start and fast probes on or off;
/// swept for 2 s, past the look its overdue schedule brings at IDLE + INTERVAL / 2.
async fn endpoint_idle(fast: bool, probes_out: u8) -> World {
    let mut w = World::armed(true);
    w.kernel.host().fast = fast.then_some(Duration::from_millis(100));
    w.connect(1, armed_kubelet(40_001));
    if let Some(s) = w.kernel.host().socks.get_mut(&Cookie(1)) {
        s.probes_out = probes_out;
    }
    w.run_until(2).await;
    w
}

/// kubelet's connection from `port` to the endpoint's `api(10)`, lifeline's keepalive in force.
fn armed_kubelet(port: u16) -> Record {
    let mut rec = kubelet(port, api(10), START);
    rec.keepalive = Keepalive {
        idle_s: 1,
        intvl_s: 1,
        cnt: 20,
        user_timeout_ms: 0,
    };
    rec
}

#[tokio::test(flavor = "current_thread")]
async fn an_endpoint_sockets_overdue_first_probe_opens_its_phase_at_that_look() {
    let w = endpoint_idle(true, 1).await;
    assert!(
        w.kernel.host().poke.contains(&Cookie(1)),
        "opened by the agent, no news from the kernel needed"
    );
    let due = w.daemon.fast_due().expect("its first pass is due");
    assert!(due <= Duration::from_millis(100), "{due:?}");

    // The controls: its probe answered, or no fast probes on the node.
    for (fast, out) in [(true, 0), (false, 1)] {
        let w = endpoint_idle(fast, out).await;
        assert!(w.kernel.host().poke.is_empty(), "fast {fast}, {out} out");
        assert_eq!(w.daemon.fast_due(), None);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn on_a_path_that_lost_a_probe_lately_the_kernels_second_probe_opens_the_phase() {
    let mut w = World::armed(true);
    w.kernel.host().fast = Some(Duration::from_millis(100));
    // Another socket to the same peer: its phase ends answered (a lost probe, not the path).
    w.connect(2, armed_kubelet(40_002));
    w.run_until(1).await;
    kernel_opens(&w, 2);
    w.run_until(2).await;
    if let Some(s) = w.kernel.host().socks.get_mut(&Cookie(2)) {
        s.probes_out = 0;
    }
    w.daemon.fast_pass();
    assert_eq!(w.daemon.fast_due(), None, "closed, answered");
    // Now kubelet's socket to that peer has its first probe overdue.
    w.connect(1, armed_kubelet(40_001));
    if let Some(s) = w.kernel.host().socks.get_mut(&Cookie(1)) {
        s.probes_out = 1;
    }
    w.run_until(4).await;
    assert!(
        !w.kernel.host().poke.contains(&Cookie(1)),
        "no phase opened at its overdue look"
    );
}
