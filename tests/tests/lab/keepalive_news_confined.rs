//! Keepalive news from an agent without `CAP_SYSLOG`, as the unit and the pod run it (only
//! `CAP_BPF`, `CAP_PERFMON`, `CAP_NET_ADMIN`): /proc/kallsyms then shows every address as 0
//! (`perf_event_paranoid` 2 here), so where fentry is refused (this machine) the tracepoint
//! fallback learns `tcp_keepalive_timer`'s address from a socket of the agent's through the
//! TCP iterator. News coming after an unanswered probe shows the address is right: the
//! fallback matches no timer otherwise. The scenario is `tests/src/news_lab.rs`; its own
//! process (one test per file) because it points `LIFELINE_BIN` at a wrapper.

use std::os::unix::fs::PermissionsExt as _;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::kernel::{self, features};
use lifeline_tests::{TempDir, require_root};

#[test]
fn a_confined_agent_learns_the_keepalive_timer_and_reports_unanswered_probes() -> Result<()> {
    require_root();
    if !kernel::has(&features::ITER_KEEPALIVE) {
        eprintln!(
            "the TCP iterator needs Linux {}: only /proc/kallsyms can give the address here",
            kernel::since(&features::ITER_KEEPALIVE)
        );
        return Ok(());
    }
    let real = lifeline_tests::paths::lifeline()?;
    let dir = TempDir::new()?;
    let wrapper = dir.path().join("lifeline");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec setpriv --bounding-set=-all,+bpf,+perfmon,+net_admin --inh-caps=-all -- {} \"$@\"\n",
            real.display()
        ),
    )?;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    // What the wrapped agent sees: no addresses (else this test would not test the fallback).
    let out = lifeline_tests::cmd::output(
        std::process::Command::new("setpriv")
            .args([
                "--bounding-set=-all,+bpf,+perfmon,+net_admin",
                "--inh-caps=-all",
            ])
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
    // SAFETY: set before any other thread of this test binary reads the environment.
    unsafe { std::env::set_var("LIFELINE_BIN", &wrapper) };
    lifeline_tests::news_lab::scenario()
}
