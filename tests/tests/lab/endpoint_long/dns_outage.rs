//! (d) The DNS server stopped for 60 s: nothing is killed, the last good set is kept and
//! the failure is reported (log and status).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::endpoint_checks::{untouched, watch_members};
use lifeline_tests::assertions::endpoint_log::DNS_FAILURE;
use lifeline_tests::scenarios::endpoint_scenario::{agent_resolved, watched_on};
use lifeline_tests::{ApiLab, ENDPOINT, api, mono_ms, require_root, wait_until};

#[test]
fn dns_outage_of_60s_keeps_the_last_good_set() -> Result<()> {
    require_root();
    let mut l = ApiLab::new(&[api(1, false)])?;
    // --max-refresh 10s bounds the retry backoff, so the recovery check below is quick.
    let args = ApiLab::agent_args(None, &["--max-refresh", "10s"]);
    let agent = agent_resolved(&l, &args, &[api(1, false)])?;
    let c = l.kube_client(&[])?;
    let conn = watched_on(&agent, &c, api(1, false), "ok")?;
    l.dns.stop();
    let stop_ms = mono_ms();
    let members = watch_members(&agent, conn.local_port, Duration::from_mins(1));
    let st = agent.status()?;
    let ep = st
        .endpoint(ENDPOINT)
        .with_context(|| format!("no endpoint in status: {:?}", st.endpoints))?;
    eprintln!("after 60 s without DNS: {:?}; members {members:?}", ep.raw);
    ensure!(
        ep.addrs == [api(1, false).to_string()],
        "the set changed: {:?}",
        ep.addrs
    );
    ensure!(
        ep.failures >= 1 && ep.last_error.is_some(),
        "failure not in status: {:?}",
        ep.raw
    );
    let failures: Vec<_> = agent
        .endpoint_events_with(DNS_FAILURE)
        .into_iter()
        .filter(|e| e.at_ms > stop_ms)
        .collect();
    ensure!(
        failures
            .iter()
            .any(|f| f.endpoint == ENDPOINT && !f.error.is_empty()),
        "no DNS failure logged"
    );
    ensure!(
        members.iter().all(|m| m == "in-set"),
        "status members: {members:?}"
    );
    untouched(&agent, &c, conn.local_port)?;
    l.dns.start()?;
    let back_ms = mono_ms();
    // An unchanged answer is not logged at info level: status shows the fresh refresh.
    wait_until(
        "a good resolution after the outage",
        Duration::from_secs(25),
        Duration::from_millis(500),
        || {
            let st = agent.status()?;
            let age = st.endpoint(ENDPOINT).and_then(|e| e.last_refresh_age_ms);
            Ok(age.filter(|a| *a < mono_ms() - back_ms))
        },
    )
    .with_context(|| format!("status: {:?}", agent.status().map(|s| s.endpoints)))?;
    Ok(())
}
