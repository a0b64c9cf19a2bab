//! ELB rotation: the endpoint's name moves from api1 to api2.
//! (a) api1 vanishes at the same moment: the first retransmission timeout makes the agent
//!     re-resolve at once, and the socket, to a peer that left the answer and unanswered,
//!     is migrated at once; the heartbeat outage is at most 15 s and the client ends up on
//!     api2;
//! (a2) the same for a client that only watches (idle between events): its first unanswered
//!     keepalive probe does it, killed within 4 s (the DNS TTL alone is 5 s);
//! (f) (a) over IPv6 (AAAA records, DNS asked over IPv6);
//! (b) api1 stays up: its sockets (a heartbeat and an idle watch, whose probes are answered)
//!     are migrated after the orphan grace, never before, never early.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::endpoint_checks::check_dropped;
use lifeline_tests::fixtures::kube::outage;
use lifeline_tests::infra::api_addrs::{DNS_V4, DNS_V6};
use lifeline_tests::scenarios::endpoint_scenario::{
    agent_resolved, back_on, check_early, check_kill, rotate_away_from_api1, wait_kill, watched_on,
};
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
    check_early(&kill, &["retransmitting", "unanswered"])?;
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

/// (a2) A watch-only client sends nothing, so no retransmission shows the black hole: its
/// keepalive does. The probe after the fault leaves within 1 s (IDLE 1 s), the next one 1 s
/// later finds it unanswered: the agent re-resolves, api1 has left, the socket is migrated
/// within 200 ms. Within 4 s, where the DNS TTL alone is 5 s (before issue 23: 5-6 s).
#[test]
fn elb_rotation_watch_only_is_killed_within_4s() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let agent = agent_resolved(&l, &ApiLab::agent_args(None, &[]), &[api(1, false)])?;
    let c = l.kube_client(&["--watch-only", "--watch-every", "2"])?;
    let old = watched_on(&agent, &c, api(1, false), "watch-event")?;

    let (fault, fault_ms) = rotate_away_from_api1(&l, false)?;
    let kill = wait_kill(&agent, old.local_port, Duration::from_secs(25))?;
    let after = kill.at_ms - fault_ms;
    eprintln!("killed {after} ms after the rotation: {}", kill.raw);
    check_early(&kill, &["unanswered"])?;
    ensure!(
        after < 4_000,
        "killed {after} ms after the rotation, want < 4 s"
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

/// (b) api1 leaves the name but keeps working: the sockets are orphaned, left alone for the
/// grace (10 s), then migrated (killed at a quiet moment) within the spread (5 s). The idle
/// watch's keepalive probes (one a second) keep being answered, so it is never migrated early.
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
    let watcher = l.kube_client(&["--watch-only", "--watch-every", "3"])?;
    let watch = watched_on(&agent, &watcher, api(1, false), "watch-event")?;
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
            let kills =
                [old.local_port, watch.local_port].map(|p| agent.kills_of(p).into_iter().next());
            Ok(match kills {
                [Some(a), Some(b)] => Some([a, b]),
                _ => None,
            })
        },
    )
    .with_context(|| agent.proc.stderr_text())?;
    for kill in &kill {
        let after = kill.at_ms - change_ms;
        eprintln!(
            "migrated {after} ms after the change: {}\nstatus members: {seen:?}",
            kill.raw
        );
        check_kill(kill, "orphaned")?;
        ensure!(kill.early.is_empty(), "migrated early: {}", kill.raw);
        ensure!(
            after >= GRACE_MS,
            "killed {after} ms after the change, before the grace"
        );
        ensure!(
            kill.orphaned_for_ms.is_none_or(|o| o >= GRACE_MS),
            "orphaned_for_ms: {}",
            kill.raw
        );
    }
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
    back_on(
        &watcher,
        &watch,
        api(2, false),
        "watch-event",
        Duration::from_secs(15),
    )?;
    ensure!(
        agent.kills_of(old.local_port).len() == 1 && agent.kills_of(watch.local_port).len() == 1,
        "{:?}",
        agent.decisions()
    );
    Ok(())
}
