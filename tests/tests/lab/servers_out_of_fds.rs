//! Hostile neighbour (b), the end of the road: the agent out of descriptors altogether (its
//! limit lowered below its own), a crowd at the metrics port and a `lifeline status` waiting.
//! Both servers' accepts fail with `EMFILE`; each warns, counts and pauses rather than ending,
//! and once descriptors are back both answer.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::metrics::{parse, scrape, scrape_until_ok};
use lifeline_tests::fixtures::crowd::{crowd, fd_numbers, set_soft_nofile};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Agent, AgentArgs, require_root, wait_until};

/// Out of descriptors: with the agent's limit lowered so that no descriptor is free, a
/// crowd at the metrics port and a `lifeline status` make both servers' accepts fail
/// (`EMFILE`); each warns, counts and pauses, and once the limit is back the scrape and the
/// waiting `status` are answered (an accept loop that ended at its first error, as the
/// metrics server's once did, never would), and the agent is still running.
#[test]
fn the_servers_keep_accepting_after_running_out_of_descriptors() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let metrics: SocketAddr = "127.0.0.1:9464".parse()?;
    let args = AgentArgs {
        extra: vec!["--metrics-addr".into(), metrics.to_string()],
        ..AgentArgs::default()
    };
    let mut agent = Agent::start_with(&s.lab, &s.cgroup, &args)?;
    agent.wait_ready(Duration::from_mins(1))?;
    let ns = s.lab.client.path();
    parse(&scrape(&ns, metrics)?.2)?;
    let pid = agent.proc.pid();
    // The limit bounds descriptor numbers, not their count, and a new descriptor takes the
    // lowest free number: the lowest free number is the limit that leaves none.
    let open = fd_numbers(pid)?;
    let limit = (0..=open.len() as libc::rlim_t)
        .find(|l| !open.contains(l))
        .context("no free number")?;
    let old = set_soft_nofile(pid, limit)?;
    let mut status = Command::new(lifeline_tests::infra::paths::lifeline()?);
    status
        .args(["status", "--json", "--status-socket"])
        .arg(&agent.status_socket);
    let (answered, warned) = std::thread::scope(|scope| {
        // Connected at once (the listen queue), answered once the server can accept.
        let waiting = scope.spawn(|| status.output());
        let warned = crowd(&s.lab, true, "tcp", &metrics.to_string(), 100).and_then(|_held| {
            wait_until(
                "both servers' warnings of a failed accept",
                Duration::from_secs(10),
                Duration::from_millis(100),
                || {
                    let warned: Vec<String> = agent
                        .messages("WARN")
                        .into_iter()
                        .filter(|m| m.contains(" server: accept failed"))
                        .collect();
                    let both = ["metrics", "status"]
                        .iter()
                        .all(|s| warned.iter().any(|m| m.starts_with(s)));
                    Ok(both.then_some(warned))
                },
            )
        });
        let restored = set_soft_nofile(pid, old);
        (waiting.join(), warned.and_then(|w| restored.map(|_| w)))
    });
    eprintln!(
        "with no descriptor free (below {limit}, {} open): {warned:?}",
        open.len()
    );
    warned?;
    let answered = answered.map_err(|_| anyhow::anyhow!("the status thread panicked"))??;
    ensure!(
        answered.status.success() && answered.stdout.starts_with(b"{"),
        "lifeline status once descriptors were back: {}",
        String::from_utf8_lossy(&answered.stderr)
    );
    let after = scrape_until_ok("a scrape once descriptors are back", &ns, metrics)?;
    for server in ["metrics", "status"] {
        let series = format!("lifeline_server_accept_errors_total{{server=\"{server}\"}}");
        let errors = after.get(&series).copied().unwrap_or_default();
        eprintln!("{series} {errors}");
        ensure!(errors >= 1.0, "{after:#?}");
    }
    eprintln!(
        "the agent's errors meanwhile: {:?}",
        agent.messages("ERROR")
    );
    ensure!(agent.proc.try_status().is_none(), "the agent exited");
    Ok(())
}
