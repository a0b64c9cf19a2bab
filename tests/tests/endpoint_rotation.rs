//! ELB rotation: the endpoint's name moves from api1 to api2.
//! (a) api1 vanishes at the same moment: the heartbeat outage is at most 15 s and the client
//!     ends up on api2 (the peer probe confirms api1 dead as soon as it leaves the answer);
//! (a2) the same for a client that only watches: killed within the DNS TTL + 5 s;
//! (f) (a) over IPv6 (AAAA records, DNS asked over IPv6);
//! (b) api1 stays up: its socket is migrated after the orphan grace, never before.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::api_addrs::{DNS_V4, DNS_V6};
use lifeline_tests::endpoint_checks::check_dropped;
use lifeline_tests::endpoint_scenario::{
    agent_resolved, back_on, check_kill, rotate_away_from_api1, wait_kill, watched_on,
};
use lifeline_tests::kube::outage;
use lifeline_tests::{ApiLab, api, require_root};

/// (a) and (f): rotation plus black hole, 1 s heartbeats and a watch on one connection.
fn rotation_with_blackhole(v6: bool) -> Result<()> {
    require_root();
    let dns: IpAddr = if v6 { DNS_V6.into() } else { DNS_V4.into() };
    let l = ApiLab::new(&[api(1, v6)])?;
    let agent = agent_resolved(&l, &ApiLab::agent_args_via(dns, None, &[]), &[api(1, v6)])?;
    let c = l.kube_client_via(dns, &[])?;
    let old = watched_on(&agent, &c, api(1, v6), "ok")?;

    let (fault, fault_ms) = rotate_away_from_api1(&l, v6)?;
    let kill = wait_kill(&agent, old.local_port, Duration::from_secs(20))?;
    eprintln!(
        "killed {} ms after the rotation: {}",
        kill.at_ms - fault_ms,
        kill.raw
    );
    check_kill(&kill, "dead-peer")?;
    let now = back_on(&c, &old, api(2, v6), "ok", Duration::from_secs(15))?;
    let o = outage(&c.events(), "ok", fault_ms);
    let ms = o.ms().context("heartbeats never came back")?;
    eprintln!("heartbeat outage {ms} ms; now on {now:?}");
    ensure!(
        ms <= 15_000,
        "heartbeat outage {ms} ms > 15 s: {o:?}\n{}",
        c.dump()
    );
    ensure!(
        agent.kills_of(old.local_port).len() == 1,
        "more than one kill: {:?}",
        agent.decisions()
    );
    check_dropped(&l, &fault)
}

#[test]
fn elb_rotation_outage_is_short() -> Result<()> {
    rotation_with_blackhole(false)
}

#[test]
fn elb_rotation_v6_outage_is_short() -> Result<()> {
    rotation_with_blackhole(true)
}

/// (a2) A watch-only client sends nothing, so no retransmission shows the black hole: only
/// the DNS change and the peer probe can. Killed within TTL (5 s) + 5 s.
#[test]
fn elb_rotation_watch_only_is_killed_within_ttl() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let agent = agent_resolved(&l, &ApiLab::agent_args(None, &[]), &[api(1, false)])?;
    let c = l.kube_client(&["--watch-only", "--watch-every", "2"])?;
    let old = watched_on(&agent, &c, api(1, false), "watch-event")?;

    let (fault, fault_ms) = rotate_away_from_api1(&l, false)?;
    let kill = wait_kill(&agent, old.local_port, Duration::from_secs(25))?;
    let after = kill.at_ms - fault_ms;
    eprintln!("killed {after} ms after the rotation: {}", kill.raw);
    check_kill(&kill, "dead-peer")?;
    ensure!(
        after <= 10_000,
        "killed {after} ms after the rotation, want <= TTL 5 s + 5 s"
    );
    back_on(
        &c,
        &old,
        api(2, false),
        "watch-event",
        Duration::from_secs(15),
    )?;
    check_dropped(&l, &fault)
}

/// (b) api1 leaves the name but keeps working: the socket is orphaned, left alone for the
/// grace (10 s), then migrated (killed at a quiet moment) within the spread (5 s).
#[test]
fn rotation_without_blackhole_migrates_after_the_grace() -> Result<()> {
    const GRACE_MS: u64 = 10_000;
    const SPREAD_MS: u64 = 5_000;
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let args = ApiLab::agent_args(None, &["--orphan-grace", "10s", "--migrate-spread", "5s"]);
    let agent = agent_resolved(&l, &args, &[api(1, false)])?;
    let c = l.kube_client(&[])?;
    let old = watched_on(&agent, &c, api(1, false), "ok")?;
    let member = |agent: &lifeline_tests::Agent| -> Option<String> {
        let st = agent.status().ok()?;
        st.socket_for_port(old.local_port)?.endpoint_member.clone()
    };
    ensure!(
        member(&agent).as_deref() == Some("in-set"),
        "before: {:?}",
        member(&agent)
    );

    let change_ms = lifeline_tests::mono_ms();
    l.dns.set(&[api(2, false)])?;
    // Meanwhile, status must say the peer is on its way out, never "in-set" once noticed.
    let mut seen = Vec::new();
    let kill = lifeline_tests::wait_until(
        "the migration",
        Duration::from_secs(40),
        Duration::from_millis(500),
        || {
            seen.extend(member(&agent));
            Ok(agent.kills_of(old.local_port).into_iter().next())
        },
    )
    .with_context(|| agent.proc.stderr_text())?;
    let after = kill.at_ms - change_ms;
    eprintln!(
        "migrated {after} ms after the change: {}\nstatus members: {seen:?}",
        kill.raw
    );
    check_kill(&kill, "orphaned")?;
    ensure!(
        after >= GRACE_MS,
        "killed {after} ms after the change, before the grace"
    );
    ensure!(
        kill.orphaned_for_ms.is_none_or(|o| o >= GRACE_MS),
        "orphaned_for_ms: {}",
        kill.raw
    );
    ensure!(
        seen.iter().any(|m| m == "leaving" || m == "orphaned"),
        "status never showed the peer leaving: {seen:?}"
    );
    // TTL 5 s: the agent learns of the change at most 5 s late; the grace starts then.
    let back = back_on(&c, &old, api(2, false), "ok", Duration::from_secs(15))?;
    let on_api2 = back.mono_ms - change_ms;
    ensure!(
        on_api2 <= 5_000 + GRACE_MS + SPREAD_MS + 5_000,
        "on api2 {on_api2} ms after the change; want TTL + grace + spread + 5 s"
    );
    ensure!(
        agent.kills_of(old.local_port).len() == 1,
        "{:?}",
        agent.decisions()
    );
    Ok(())
}

/// `--action restart` replaces kills of broken sockets by restarts, but an orphan migration is
/// hygiene, not a failure: it stays a kill at a quiet moment, and nothing is restarted.
#[test]
fn action_restart_still_migrates_orphans_by_a_kill() -> Result<()> {
    require_root();
    let m = lifeline_tests::systemd::UserManager::start()?;
    m.install("kubelet.service", "[Service]\nExecStart=/bin/sleep 300\n")?;
    m.systemctl(&["start", "kubelet.service"])?;
    let pid = m.prop("kubelet.service", "MainPID")?;
    let l = ApiLab::new(&[api(1, false)])?;
    let bus = m.bus_address();
    let extra = [
        "--orphan-grace",
        "3s",
        "--migrate-spread",
        "1s",
        "--action",
        "restart",
        "--restart-unit",
        "kubelet.service",
        "--systemd-bus",
        &bus,
    ];
    let agent = agent_resolved(&l, &ApiLab::agent_args(None, &extra), &[api(1, false)])?;
    let c = l.kube_client(&[])?;
    let old = watched_on(&agent, &c, api(1, false), "ok")?;

    l.dns.set(&[api(2, false)])?;
    let kill = lifeline_tests::wait_until(
        "the migration",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || Ok(agent.kills_of(old.local_port).into_iter().next()),
    )
    .with_context(|| agent.proc.stderr_text())?;
    check_kill(&kill, "orphaned")?;
    std::thread::sleep(Duration::from_secs(2));
    let restarts: Vec<_> = agent
        .decisions()
        .into_iter()
        .filter(|d| d.action == "restart")
        .collect();
    ensure!(
        restarts.is_empty(),
        "a migration restarted the unit: {restarts:?}"
    );
    ensure!(
        m.prop("kubelet.service", "MainPID")? == pid,
        "the unit was restarted"
    );
    Ok(())
}
