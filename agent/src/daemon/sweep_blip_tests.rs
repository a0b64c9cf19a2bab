//! A blip is not a death, over whole sweeps against the fake kernel: the path to the
//! endpoint goes away (no address accepts, the peer probe finds the path down) for longer
//! than the stall rule needs, and comes back with the flow alive. Nothing may be killed.

use std::sync::atomic::Ordering;

use super::fake_world::{START, World, api, kubelet};
use crate::judge::Cookie;

/// kubelet's flow to the API stalls with the whole path for 25 s: the rule calls it
/// stalled, the kill is held while the path is down, and when the path returns the flow
/// hears from its peer again (its last ACK moves): no socket is destroyed in the whole run.
#[tokio::test(flavor = "current_thread")]
async fn a_blip_with_recovery_kills_nothing() {
    let mut w = World::new(6, true);
    w.connect(1, kubelet(40_001, api(10), START));
    w.run_until(2).await;
    w.net.down.store(true, Ordering::SeqCst);
    w.silent(1, true);
    w.run_until(27).await;
    let during = w.published();
    assert!(
        during.path_down_ms.is_some(),
        "the path is known to be down"
    );
    assert_eq!(
        during.verdicts.get("stalled"),
        Some(&1),
        "the stall rule holds on the flow: only the path keeps it alive"
    );
    assert_eq!(
        w.destroyed(),
        Vec::<u64>::new(),
        "no kill while the path is down"
    );
    assert!(
        w.decisions("stalled", "hold", "held") >= 1 && during.holds >= 1,
        "the kill was decided and held by the guard: {} held",
        during.holds
    );

    w.net.down.store(false, Ordering::SeqCst);
    w.silent(1, false);
    w.run_until(60).await;
    let after = w.published();
    assert_eq!(
        w.destroyed(),
        Vec::<u64>::new(),
        "no kill across the return"
    );
    assert_eq!(after.path_down_ms, None, "the path is back");
    assert_eq!(
        after.verdicts.get("stalled"),
        Some(&0),
        "{:?}",
        after.verdicts
    );
    assert_eq!(w.decisions("stalled", "kill", "killed"), 0);
    assert!(w.kernel.host().socks.contains_key(&Cookie(1)));
}

/// The control: the same silence with the path working (the other address accepts, the
/// peer itself does not) is the flow's death, and the flow is killed.
#[tokio::test(flavor = "current_thread")]
async fn the_same_silence_with_the_path_up_is_a_kill() {
    let mut w = World::new(6, true);
    w.connect(1, kubelet(40_001, api(10), START));
    w.run_until(2).await;
    w.silent(1, true);
    w.run_until(27).await;
    assert_eq!(w.destroyed(), [1]);
    assert_eq!(w.published().path_down_ms, None);
}
