//! Keepalive news, the scenario (`tests/tests/lab/keepalive_news.rs` as root,
//! `keepalive_news_confined.rs` with the unit's three capabilities, as in the pod): the kernel
//! itself reports a watched idle socket whose keepalive probes go unanswered
//! (`news::UNANSWERED`, counted in `lifeline_probe_unanswered_news_total`), and says nothing
//! about a healthy idle socket, whose probes are all answered.
//!
//! Two idle watched connections sit side by side. While both are healthy no news comes; once
//! one flow is black-holed, news comes when its first probe went unanswered (at the next
//! probe, 1 s later: the first sign of trouble), then none until its 11th (`--silent-probes`
//! 12 minus 2, 1 s apart after 1 s idle), and stops once lifeline killed it, while the
//! healthy one keeps being probed. At the kernel's own cadence (`--fast-probes off`).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::assertions::metrics::{parse, scrape};
use crate::infra::kernel::{self, features};
use crate::scenarios::idle_lab::{SERVER, agent_of, wait_armed};
use crate::scenarios::scenario::Setup;
use crate::{Client, mono_ms, wait_until};

const METRIC: &str = "lifeline_probe_unanswered_news_total";
/// `--silent-probes` 12 - 2: from the 11th probe in a row, each one is news again.
const UNANSWERED_MIN: u64 = 10;

fn news(ns: &str, addr: SocketAddr) -> Result<u64> {
    let m = parse(&scrape(ns, addr)?.2)?;
    let v = m
        .get(METRIC)
        .copied()
        .with_context(|| format!("no {METRIC}"))?;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a counter: a small whole number"
    )]
    Ok(v as u64)
}

/// The scenario of `tests/tests/lab/keepalive_news.rs`, with the agent `bin` (None:
/// `paths::lifeline()`; the confined variant passes a wrapper).
///
/// # Errors
/// When the kernel's news do not come as described, or the lab fails.
pub fn scenario(bin: Option<&Path>) -> Result<()> {
    let s = Setup::new()?;
    let addr: SocketAddr = "127.0.0.1:9464".parse()?;
    // The kernel's own 1 s cadence, whose probes this scenario counts one by one (fast
    // probes are `idle.rs`'s).
    let agent = agent_of(
        &s,
        bin,
        &["--metrics-addr", &addr.to_string(), "--fast-probes", "off"],
    )?;
    let ns = s.lab.client.path();
    let healthy = Client::start(&s.lab, Some(&s.cgroup), &["--peer", SERVER, "idle"])?;
    let args = ["--peer", SERVER, "watch", "--every", "60"];
    let doomed = Client::start(&s.lab, Some(&s.cgroup), &args)?;
    let (hp, dp) = (
        healthy.local_port().context("no local port")?,
        doomed.local_port().context("no local port")?,
    );
    wait_armed(&agent, hp, "1s,1s,20")?;
    wait_armed(&agent, dp, "1s,1s,20")?;

    // Both idle and answered: at least five probes each, no news.
    std::thread::sleep(Duration::from_secs(12));
    ensure!(news(&ns, addr)? == 0, "news from healthy idle sockets");

    let fault = s.lab.blackhole_flow(dp)?;
    let fault_ms = mono_ms();
    let first = wait_until(
        "unanswered probes",
        Duration::from_secs(25),
        Duration::from_millis(100),
        || Ok((news(&ns, addr)? > 0).then(mono_ms)),
    );
    if !kernel::has(&features::KEEPALIVE_NEWS) {
        // The documented degradation: no news, the idle socket is still found by sock_diag.
        ensure!(first.is_err(), "news on a kernel without the hook");
        ensure!(
            agent
                .proc
                .stderr_text()
                .contains("keepalive news unavailable")
        );
        kernel::report(&features::KEEPALIVE_NEWS, "no news; warned at start");
        return Ok(());
    }
    let after = first? - fault_ms;
    // The first probe after the fault leaves within 1 s (one a second), the next one 1 s
    // later reports it unanswered.
    ensure!(
        (500..=2000 + 2500).contains(&after),
        "first news {after} ms after the black hole"
    );
    // Then quiet until the threshold: probes 2 to 10 unanswered are no news.
    std::thread::sleep(Duration::from_millis(
        (UNANSWERED_MIN * 1000).saturating_sub(mono_ms() - fault_ms + 1500),
    ));
    let early = news(&ns, addr)?;
    ensure!(early == 1, "{early} news before the threshold");
    let kill = wait_until(
        "the silent kill",
        Duration::from_secs(20),
        Duration::from_millis(200),
        || {
            Ok(agent
                .decisions()
                .into_iter()
                .find(|d| d.is_for_port(dp) && d.action == "kill"))
        },
    )?;
    ensure!(kill.verdict == "silent", "{}", kill.raw);
    let at_kill = news(&ns, addr)?;
    // The healthy socket keeps being probed and answered: nothing more comes.
    std::thread::sleep(Duration::from_secs(6));
    let total = news(&ns, addr)?;
    ensure!(
        total == at_kill,
        "news after the kill: {at_kill} then {total}"
    );
    // The first, then one per probe from the 11th until the kill, at most up to the kernel's
    // own 20th.
    ensure!((2..=11).contains(&total), "{total} news");
    let (_, dropped) = s.lab.counters(&fault)?;
    ensure!(dropped > 0, "the black hole dropped nothing");
    ensure!(healthy.errors().is_empty(), "healthy: {}", healthy.dump());
    kernel::report(
        &features::KEEPALIVE_NEWS,
        &format!(
            "{total} news for the black-holed idle socket, the first {after} ms after the fault; none for the healthy one"
        ),
    );
    Ok(())
}
