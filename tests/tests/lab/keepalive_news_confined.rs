//! Keepalive news from an agent without `CAP_SYSLOG`, as the unit and the pod run it (only
//! `CAP_BPF`, `CAP_PERFMON`, `CAP_NET_ADMIN`): /proc/kallsyms then shows every address as 0
//! (`perf_event_paranoid` 2 here), so where fentry is refused (this machine) the tracepoint
//! fallback learns `tcp_keepalive_timer`'s address from a socket of the agent's through the
//! TCP iterator. News coming after an unanswered probe shows the address is right: the
//! fallback matches no timer otherwise. The scenario is `tests/src/scenarios/news_lab.rs`; the agent
//! runs through a `setpriv` wrapper passed to it explicitly. Before Linux 5.15 (no TCP
//! iterator) the documented degradation is asserted instead: one warning naming
//! `CAP_SYSLOG` and the iterator, unless fentry itself loads (then the news come as above).

use std::path::Path;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::fixtures::confined;
use lifeline_tests::infra::kernel::{self, features};
use lifeline_tests::scenarios::idle_lab::agent_of;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{TempDir, require_root};

#[test]
fn a_confined_agent_learns_the_keepalive_timer_and_reports_unanswered_probes() -> Result<()> {
    require_root();
    let dir = TempDir::new()?;
    let wrapper = confined::wrapper(dir.path())?;
    // What the wrapped agent sees: no addresses (else this test would not test the fallback).
    let out = lifeline_tests::infra::cmd::output(
        std::process::Command::new("setpriv")
            .arg(format!("--bounding-set=-all,{}", confined::CAPS))
            .arg("--inh-caps=-all")
            .args(["--", "grep", "-w", "tcp_keepalive_timer", "/proc/kallsyms"]),
    )?;
    let line = String::from_utf8_lossy(&out.stdout);
    let line = line
        .lines()
        .next()
        .context("no tcp_keepalive_timer in /proc/kallsyms")?;
    ensure!(
        line.starts_with("0000000000000000 "),
        "a confined process reads the address ({line}): this machine does not hide it"
    );
    if !kernel::has(&features::ITER_KEEPALIVE) {
        eprintln!(
            "the TCP iterator needs Linux {}: only fentry or /proc/kallsyms can report here",
            kernel::since(&features::ITER_KEEPALIVE)
        );
        if let Some(why) = news_unavailable(&wrapper)? {
            ensure!(
                why.contains("CAP_SYSLOG") && why.contains("TCP iterator"),
                "the warning does not name what is missing: {why}"
            );
            return Ok(());
        }
    }
    lifeline_tests::scenarios::news_lab::scenario(Some(&wrapper))
}

/// Starts the confined agent once: the error of its "keepalive news unavailable" warning,
/// or None when its news hook loaded (fentry needs no address).
fn news_unavailable(wrapper: &Path) -> Result<Option<String>> {
    let s = Setup::new()?;
    let agent = agent_of(&s, Some(wrapper), &["--fast-probes", "off"])?;
    Ok(agent.log().into_iter().find_map(|(_, v)| {
        let message = v.pointer("/fields/message")?.as_str()?;
        message
            .starts_with("keepalive news unavailable")
            .then(|| v.pointer("/fields/error")?.as_str().map(str::to_owned))?
    }))
}
