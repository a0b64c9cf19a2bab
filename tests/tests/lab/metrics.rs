//! Scenario (f): the metrics endpoint serves parseable Prometheus (the `OpenMetrics` format)
//! text whose numbers match what happened: one watched socket, then one black hole and
//! exactly one kill, with its detection latency in the histogram.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Result;
use lifeline_tests::assertions::metrics::{parse, scrape};
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::{Agent, AgentArgs, require_root, wait_until};

const STALL: Duration = Duration::from_secs(4);

#[test]
fn metrics_count_what_happened() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let client = s.heartbeat_client(&[])?;
    let addr: SocketAddr = "127.0.0.1:9464".parse()?;
    let args = AgentArgs {
        extra: vec!["--metrics-addr".into(), addr.to_string()],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let ns = s.lab.client.path();

    let before = wait_until(
        "one watched socket",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            let m = parse(&scrape(&ns, addr)?.2)?;
            Ok((m.get("lifeline_watched_sockets") == Some(&1.0)).then_some(m))
        },
    )?;
    assert_eq!(
        before.get("lifeline_kills_total"),
        Some(&0.0),
        "{before:#?}"
    );
    assert_eq!(
        before.get("lifeline_sockets{verdict=\"healthy\"}"),
        Some(&1.0),
        "{before:#?}"
    );
    assert_eq!(
        before.get("lifeline_detection_latency_seconds_count"),
        Some(&0.0)
    );

    blackhole_until_killed(&s, &agent, &client, STALL)?;
    let (status, ctype, body) = scrape(&ns, addr)?;
    eprintln!("{body}");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    let after = parse(&body)?;
    assert_eq!(after.get("lifeline_kills_total"), Some(&1.0), "{body}");
    let killed = "lifeline_decisions_total{verdict=\"stalled\",action=\"kill\",outcome=\"killed\"}";
    assert_eq!(after.get(killed), Some(&1.0), "{body}");
    assert_eq!(
        after.get("lifeline_detection_latency_seconds_count"),
        Some(&1.0),
        "{body}"
    );
    let sum = after
        .get("lifeline_detection_latency_seconds_sum")
        .copied()
        .unwrap_or_default();
    // From the first trouble to the kill: 8 RTOs in a row (about 2.4 s) with linear timeouts,
    // else the whole stall-timeout.
    let least = if kernel::has(&features::LINEAR_TIMEOUTS) {
        1.0
    } else {
        STALL.as_secs_f64()
    };
    assert!(
        (least..STALL.as_secs_f64() + 10.0).contains(&sum),
        "latency {sum} s"
    );
    // The restart series exist from the start (so `increase()` sees a first restart) and
    // stay at 0: no restart happened.
    let restarts: Vec<_> = after
        .iter()
        .filter(|(k, _)| k.starts_with("lifeline_restarts_total"))
        .collect();
    assert!(
        !restarts.is_empty() && restarts.iter().all(|(_, v)| **v == 0.0),
        "no restart happened: {body}"
    );
    Ok(())
}

/// Metrics beyond the node only when asked for: a non-loopback address is refused.
#[test]
fn non_loopback_metrics_address_is_refused() -> Result<()> {
    require_root();
    let out = lifeline_tests::infra::cmd::output(
        std::process::Command::new(lifeline_tests::infra::paths::lifeline()?).args([
            "run",
            "--metrics-addr",
            "198.51.100.1:9464",
        ]),
    )?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--metrics-addr 198.51.100.1:9464") && err.contains("--metrics-allow-remote"),
        "{err}"
    );
    Ok(())
}
