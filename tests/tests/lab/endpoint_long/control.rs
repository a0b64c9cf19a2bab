//! The control for (a): the same rotation without the agent keeps the client down for
//! the whole 90 s window.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::scenarios::endpoint_scenario::rotate_away_from_api1;
use lifeline_tests::{ApiLab, api, assertions::ss, require_root};

/// The control for (a): no agent. The client waits on the dead api1 for the whole window.
#[test]
fn elb_rotation_without_agent_stays_down_for_90s() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let c = l.kube_client(&[])?;
    let old = c.current().context("no connection")?;
    c.wait_event("a heartbeat", Duration::from_secs(10), |e| e.event == "ok")?;
    let (_fault, fault_ms) = rotate_away_from_api1(&l, false)?;
    std::thread::sleep(Duration::from_secs(90));
    let late = c.successes_after(fault_ms + 1_500, "ok");
    ensure!(
        late.is_empty(),
        "heartbeats during the black hole: {late:?}"
    );
    ensure!(
        c.connections().len() == 1 && c.errors().is_empty(),
        "the client recovered alone: {}",
        c.dump()
    );
    let sock = ss::find(&l.lab.client, old.local_port, old.peer)?;
    ensure!(
        sock.is_some_and(|s| s.send_q > 0),
        "not stuck with data queued:\n{}",
        ss::dump(&l.lab.client)
    );
    Ok(())
}
