//! Hostile neighbour (b): crowds at the agent's servers. An unprivileged user (uid 65534,
//! `lab-crowd --nobody`) holds 2,000 idle connections to the metrics port and cannot connect
//! to the status socket at all (it is 0600, root's); root itself holds 1,000 idle connections
//! to the status socket, to show that server bounded too. While they are held the agent
//! answers `lifeline status` and a scrape, kills a black-holed target connection within its
//! usual time, counts whom it turned away, and its descriptors stay within the servers' caps.
//! Out of descriptors altogether: `servers_out_of_fds.rs`.

use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use lifeline_tests::assertions::metrics::{parse, scrape, scrape_until_ok};
use lifeline_tests::fixtures::crowd::{connected, crowd, fds};
use lifeline_tests::scenarios::scenario::{Setup, blackhole_until_killed};
use lifeline_tests::{Agent, AgentArgs, Proc, TempDir, require_root, wait_until};

const STALL: Duration = Duration::from_secs(4);
/// The agent's caps (report/metrics/http.rs, report/status/server.rs), and a margin for
/// what it opens on its own meanwhile (a /proc read, a peer probe, a sweep's netlink).
const CAPS: usize = 16 + 4;
const MARGIN: usize = 8;

#[test]
fn crowds_at_the_servers_do_not_blind_the_agent() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let client = s.heartbeat_client(&[])?;
    // A directory anyone may enter: only the socket's own mode keeps uid 65534 out.
    let dir = TempDir::new()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    let sock = dir.path().join("status.sock");
    let metrics: SocketAddr = "127.0.0.1:9464".parse()?;
    let args = AgentArgs {
        extra: vec!["--metrics-addr".into(), metrics.to_string()],
        status_socket: Some(sock.clone()),
        ..AgentArgs::default()
    };
    // Umask 0 for the agent (it inherits it): the socket's mode is then the agent's doing.
    // SAFETY: umask(2) cannot fail; the test's own mask is put back at once.
    let mask = unsafe { libc::umask(0) };
    let started = Agent::start_with(&s.lab, &s.cgroup, &args);
    // SAFETY: as above.
    unsafe { libc::umask(mask) };
    let mut agent = started?;
    agent.wait_ready(Duration::from_mins(1))?;
    let meta = std::fs::symlink_metadata(&sock)?;
    ensure!(
        meta.uid() == 0 && meta.mode() & 0o777 == 0o600,
        "{}: uid {} mode {:o}",
        sock.display(),
        meta.uid(),
        meta.mode()
    );
    let ns = s.lab.client.path();
    let pid = agent.proc.pid();
    parse(&scrape(&ns, metrics)?.2)?;
    let fds_before = fds(pid);

    // The agent's descriptors, sampled all along (bounded: until told, or 5 minutes).
    let (stop, peak) = (AtomicBool::new(false), AtomicUsize::new(0));
    let crowds = std::thread::scope(|scope| -> Result<_> {
        scope.spawn(|| {
            let t0 = Instant::now();
            while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_mins(5) {
                peak.fetch_max(fds(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let held = hold_and_check(&s, &agent, &sock, metrics);
        stop.store(true, Ordering::Relaxed);
        held
    })?;
    let peak = peak.load(Ordering::Relaxed);
    eprintln!("agent descriptors: {fds_before} before, at most {peak} under the crowds");
    ensure!(
        peak <= fds_before + CAPS + MARGIN,
        "the agent's descriptors grew to {peak} (from {fds_before}; caps {CAPS})"
    );

    let killed = blackhole_until_killed(&s, &agent, &client, STALL)?;
    eprintln!(
        "killed {} ms after the black hole, the crowds still held",
        killed.decision.at_ms - killed.fault_ms
    );
    let after = parse(&scrape(&ns, metrics)?.2)?;
    let counter = |name: &str, server: &str| {
        after
            .get(&format!(
                "lifeline_server_{name}_total{{server=\"{server}\"}}"
            ))
            .copied()
            .unwrap_or(-1.0)
    };
    let (tcp_said, held) = crowds;
    let tcp = connected(&tcp_said);
    eprintln!(
        "metrics: refused {} timed out {}; status: refused {} timed out {}",
        counter("refused", "metrics"),
        counter("timeouts", "metrics"),
        counter("refused", "status"),
        counter("timeouts", "status"),
    );
    // Each idle connection is either closed at once (16 already served) or served until its
    // 2 s for a request head run out: none is held longer, none is forgotten.
    let tcp = f64::from(u32::try_from(tcp)?);
    let (refused, timeouts) = (
        counter("refused", "metrics"),
        counter("timeouts", "metrics"),
    );
    ensure!(
        refused + timeouts >= tcp && refused >= tcp / 2.0 && timeouts >= 16.0,
        "{tcp} idle connections: refused {refused}, timed out {timeouts}"
    );
    ensure!(counter("refused", "status") > 0.0, "{after:#?}");
    drop(held);
    Ok(())
}

/// Starts the crowds, checks what they can and cannot do, and that the agent still answers;
/// returns what the metrics crowd said, and the crowds, still held.
fn hold_and_check(
    s: &Setup,
    agent: &Agent,
    sock: &Path,
    metrics: SocketAddr,
) -> Result<(Vec<String>, Vec<Proc>)> {
    let shown = sock.display().to_string();
    let (tcp, tcp_said) = crowd(&s.lab, true, "tcp", &metrics.to_string(), 2000)?;
    ensure!(
        tcp_said[0].starts_with("uid 65534 ") && connected(&tcp_said) >= 1000,
        "{tcp_said:?}"
    );
    let (denied, said) = crowd(&s.lab, true, "unix", &shown, 1)?;
    ensure!(
        said.contains(&"connected 0".to_owned())
            && said.iter().any(|l| l.contains("(os error 13)")),
        "uid 65534 and the 0600 status socket: {said:?}"
    );
    let (root, said) = crowd(&s.lab, false, "unix", &shown, 1000)?;
    ensure!(connected(&said) == 1000, "{said:?}");

    let t0 = Instant::now();
    let status = wait_until(
        "lifeline status beside the crowds",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || Ok(agent.status().ok()),
    )?;
    let status_ms = t0.elapsed().as_millis();
    let t0 = Instant::now();
    let ns = s.lab.client.path();
    scrape_until_ok("a scrape beside the crowds", &ns, metrics)?;
    eprintln!(
        "beside the crowds: status in {status_ms} ms ({} sockets), a scrape in {} ms",
        status.sockets.len(),
        t0.elapsed().as_millis()
    );
    Ok((tcp_said, vec![tcp, denied, root]))
}
