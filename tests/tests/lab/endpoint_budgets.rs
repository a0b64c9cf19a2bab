//! Issue 34, test d: kill budgets per owner. A local user (uid 65534, in a login session's
//! cgroup) kills its own connections to the API endpoint as fast as it can: each made to
//! die by `IP_TTL` 1 on the routed path to the API server (no privilege needed), so the
//! agent judges them stalled and kills them. Its kills spend its own budget only (`endpoint
//! client .../user-65534.slice uid 65534`, 6 a minute at the default), so while it is spent,
//! kubelet's black-holed connection (its unit's cgroup target) and a kube-proxy stand-in's
//! (another endpoint client, in a unit's cgroup of its own) are still killed at once, each
//! from its own budget. With one budget for all endpoint clients (before issue 34) the
//! stand-in's kill was `rate-limited`.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::assertions::watched::wait_watched;
use lifeline_tests::fixtures::unit_agent::field;
use lifeline_tests::infra::nobody::NOBODY;
use lifeline_tests::infra::paths::fixture;
use lifeline_tests::infra::routed::RoutedApi;
use lifeline_tests::{
    Agent, AgentArgs, Cgroup, Client, Decision, Lab, Proc, cgroup2_mount, mono_ms, require_root,
    wait_until,
};

/// How a budget names a cgroup: its path from the hierarchy's root.
fn key(cg: &Cgroup) -> Result<String> {
    let rel = cg.path().strip_prefix(cgroup2_mount()?)?;
    Ok(format!("/{}", rel.display()))
}

/// The user's spender, started in `cg`: its pid once it is ready.
fn spender(lab: &Lab, cg: &Cgroup) -> Result<(Proc, u64)> {
    let bin = fixture("lab-ttl-spender")?;
    let peer = RoutedApi::addr().to_string();
    let args = ["--peer", &peer, "--seconds", "90"];
    let cmd = cg.command_in_netns(lab.client.name(), bin.to_str().context("path")?, &args);
    let mut p = Proc::spawn("lab-ttl-spender", cmd)?;
    p.wait_stdout("the spender to be ready", Duration::from_secs(15), |l| {
        l == "ready"
    })?;
    let lines = p.stdout_lines();
    let first = lines.first().map(|l| l.text.clone()).unwrap_or_default();
    let pid = first
        .strip_prefix(&format!("uid {NOBODY} pid "))
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("the spender did not run as uid {NOBODY}: {first}"))?;
    Ok((p, pid))
}

/// The kill decision about local `port`, which must be a kill, not a refusal.
fn killed(a: &Agent, port: u16, who: &str) -> Result<Decision> {
    let d = wait_until(
        &format!("the decision about {who}'s black-holed connection"),
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            Ok(a.decisions()
                .into_iter()
                .find(|d| d.action == "kill" && d.is_for_port(port)))
        },
    )?;
    ensure!(
        d.outcome == "killed",
        "{who}'s connection was not killed ({}), budget {:?}: {}",
        d.outcome,
        field(&d, "budget"),
        d.message
    );
    Ok(d)
}

#[test]
fn a_user_spending_kills_leaves_kubelet_and_kube_proxy_their_own() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _api = RoutedApi::new(&lab)?;
    let endpoint = RoutedApi::addr().to_string();
    let kubelet_cg = Cgroup::unit("kubelet")?;
    let proxy_cg = Cgroup::unit("kube-proxy")?;
    let user_cg = Cgroup::user_session(NOBODY)?;
    // kubelet's unit and the endpoint's clients, as the node default; the default budget.
    let args = AgentArgs {
        extra: vec![
            "--endpoint-clients".into(),
            "--endpoint".into(),
            endpoint.clone(),
        ],
        ..AgentArgs::default()
    };
    let mut a = Agent::start_targets(&lab, &[kubelet_cg.path()], &args)?;
    a.wait_ready(Duration::from_mins(1))?;
    let heartbeat = ["--peer", &endpoint, "heartbeat", "--interval", "1s"];
    let kubelet = Client::start(&lab, Some(&kubelet_cg), &heartbeat)?;
    let proxy = Client::start(&lab, Some(&proxy_cg), &heartbeat)?;
    let kubelet_port = kubelet.local_port().context("kubelet's port")?;
    let proxy_port = proxy.local_port().context("kube-proxy's port")?;
    let s = wait_watched(&a, kubelet_port, Duration::from_secs(10))?;
    ensure!(s.watched_by.iter().any(|w| w == "cgroup"), "{}", s.raw);
    let s = wait_watched(&a, proxy_port, Duration::from_secs(10))?;
    ensure!(s.watched_by == ["endpoint"], "{}", s.raw);

    // The user spends what it can until a kill of its own is refused.
    let (mut user, pid) = spender(&lab, &user_cg)?;
    let mine = |d: &Decision| d.owner_pid == Some(pid) && d.action == "kill";
    let refused = wait_until(
        "a kill of the user's own refused by a spent budget",
        Duration::from_mins(1),
        Duration::from_millis(100),
        || {
            ensure!(user.try_status().is_none(), "{}", user.stderr_text());
            Ok(a.decisions()
                .into_iter()
                .find(|d| mine(d) && d.outcome == "rate-limited"))
        },
    )?;
    let spent = a.decisions().into_iter().filter(mine).collect::<Vec<_>>();
    let first_ms = spent.iter().filter_map(|d| d.logged_ms).min().unwrap_or(0);
    let kills = spent.iter().filter(|d| d.outcome == "killed").count();
    eprintln!(
        "the user: {kills} kills, then refused {} ms after its first",
        refused.logged_ms.unwrap_or(0).saturating_sub(first_ms)
    );

    // Now kubelet's and kube-proxy's connections die.
    let _faults = (
        lab.blackhole_flow(kubelet_port)?,
        lab.blackhole_flow(proxy_port)?,
    );
    let fault_ms = mono_ms();
    let k = killed(&a, kubelet_port, "kubelet")?;
    let p = killed(&a, proxy_port, "kube-proxy")?;
    for (who, d) in [("kubelet", &k), ("kube-proxy", &p)] {
        let after = d.logged_ms.unwrap_or(d.at_ms).saturating_sub(fault_ms);
        eprintln!("{who} killed {after} ms after its black hole");
        ensure!(
            after < 15_000,
            "{who} killed only {after} ms after its black hole"
        );
        ensure!(
            d.logged_ms.unwrap_or(d.at_ms) < first_ms + 60_000,
            "{who}'s kill came after the user's minute: not tested against a spent budget"
        );
    }
    ensure!(
        field(&k, "budget") == format!("cgroup {}", key(&kubelet_cg)?),
        "{}",
        k.raw
    );
    let proxy_budget = format!("endpoint client {} uid 0", key(&proxy_cg)?);
    ensure!(field(&p, "budget") == proxy_budget, "{}", p.raw);

    // The user paid alone: its own budget, 6 kills a minute.
    let user_budget = format!("endpoint client {} uid {NOBODY}", user_group(&user_cg)?);
    let spent = a.decisions().into_iter().filter(mine).collect::<Vec<_>>();
    for d in &spent {
        ensure!(field(d, "budget") == user_budget, "{}", d.raw);
    }
    let in_minute = spent
        .iter()
        .filter(|d| d.outcome == "killed" && d.logged_ms.is_some_and(|t| t < first_ms + 59_000))
        .count();
    ensure!(
        (1..=6).contains(&in_minute),
        "{in_minute} of the user's kills in its first minute"
    );
    ensure!(
        refused
            .message
            .contains(&format!("the kill budget of {user_budget}")),
        "{}",
        refused.message
    );
    drop(user);
    Ok(())
}

/// The user's budget names its login slice, not the session scope: everything its sessions
/// and its own manager run is one owner.
fn user_group(session: &Cgroup) -> Result<String> {
    let k = key(session)?;
    let (slice, _) = k
        .rsplit_once('/')
        .context("a session below the user's slice")?;
    Ok(slice.to_owned())
}
