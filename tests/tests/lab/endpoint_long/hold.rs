//! (e) Every server black-holed: nothing is killed while no endpoint is healthy (hold);
//! once api2 is back, the stalled socket is killed, once.

use std::time::Duration;

use anyhow::{Result, ensure};
use lifeline_tests::assertions::endpoint_checks::holds_of;
use lifeline_tests::scenarios::endpoint_scenario::{
    agent_resolved, back_on, check_kill, wait_kill, watched_on,
};
use lifeline_tests::{ApiLab, api, assertions::ss, mono_ms, require_root};

#[test]
fn all_servers_blackholed_hold_then_one_kill() -> Result<()> {
    require_root();
    let set = [api(1, false), api(2, false)];
    let l = ApiLab::new(&set)?;
    let agent = agent_resolved(&l, &ApiLab::agent_args(Some("4s"), &[]), &set)?;
    let c = l.kube_client(&[])?;
    let old = watched_on(&agent, &c, api(1, false), "ok")?;
    let faults = [1, 2, 3].map(|n| l.lab.blackhole(api(n, false)));
    let [f1, f2, f3] = faults;
    let (_f1, f2, _f3) = (f1?, f2?, f3?);
    std::thread::sleep(Duration::from_secs(30));
    let holds = holds_of(&agent, old.local_port);
    ensure!(
        agent.kills_of(old.local_port).is_empty(),
        "killed while nothing was healthy: {:?}",
        agent.decisions()
    );
    ensure!(
        !holds.is_empty(),
        "no hold decision in 30 s:\n{}",
        agent.proc.stderr_text()
    );
    ensure!(
        holds
            .iter()
            .all(|h| h.message.contains("no healthy endpoint, holding")),
        "{holds:?}"
    );
    ensure!(
        ss::find(&l.lab.client, old.local_port, old.peer)?.is_some(),
        "socket gone during the hold"
    );

    l.lab.heal(&f2)?;
    let heal_ms = mono_ms();
    let kill = wait_kill(&agent, old.local_port, Duration::from_secs(30))?;
    eprintln!(
        "{} holds; killed {} ms after api2 came back: {}",
        holds.len(),
        kill.at_ms - heal_ms,
        kill.raw
    );
    ensure!(
        matches!(kill.verdict.as_str(), "stalled" | "dead-peer"),
        "{}",
        kill.raw
    );
    check_kill(&kill, &kill.verdict)?;
    back_on(&c, &old, api(2, false), "ok", Duration::from_secs(20))?;
    std::thread::sleep(Duration::from_secs(5));
    ensure!(
        agent.kills_of(old.local_port).len() == 1,
        "killed more than once: {:?}",
        agent.decisions()
    );
    Ok(())
}
