//! Scenario (c): every decision is one journal entry with structured fields, in a
//! real systemd-journald, so `journalctl LIFELINE_ACTION=kill` finds every kill.

use std::time::Duration;

use anyhow::Result;
use lifeline_tests::infra::journald::Journald;
use lifeline_tests::infra::paths::lifeline;
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Proc, SERVER_V4, TempDir, require_root, wait_until};
use serde_json::Value;

fn field<'a>(e: &'a Value, k: &str) -> &'a str {
    e.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn number(e: &Value, k: &str) -> u64 {
    field(e, k).parse().unwrap_or_default()
}

#[test]
fn decisions_are_structured_journal_entries() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let client = s.heartbeat_client(&[])?;
    let port = client.local_port().expect("local port");
    let journal = Journald::start()?;
    let dir = TempDir::new()?;
    let bin = lifeline()?;
    let sock = dir.path().join("status.sock");
    let cgroup = s.cgroup.path().display().to_string();
    let args = [
        &format!("--net={}", s.lab.client.path()),
        "--",
        bin.to_str().unwrap_or_default(),
        "run",
        "--log",
        "journald",
        "--cgroup",
        &cgroup,
        "--ports",
        "6443",
        "--stall-timeout",
        "4s",
        "--status-socket",
        sock.to_str().unwrap_or_default(),
    ];
    let mut agent = Proc::spawn("lifeline", journal.command("nsenter", &args))?;
    let ready = wait_until(
        "the ready entry",
        Duration::from_mins(1),
        Duration::from_millis(200),
        || {
            if let Some(st) = agent.try_status() {
                anyhow::bail!("lifeline exited ({st}): {}", agent.stderr_text());
            }
            Ok(journal
                .entries(&["LIFELINE_EVENT=ready"])?
                .into_iter()
                .next())
        },
    )?;
    assert_eq!(field(&ready, "SYSLOG_IDENTIFIER"), "lifeline", "{ready}");
    assert_eq!(field(&ready, "PRIORITY"), "6", "info: {ready}");

    let _fault = s.lab.blackhole(SERVER_V4.into())?;
    let kills = wait_until(
        "a kill in the journal",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || Ok(Some(journal.entries(&["LIFELINE_ACTION=kill"])?).filter(|k| !k.is_empty())),
    )?;
    std::thread::sleep(Duration::from_secs(2)); // a duplicate would show up by now
    let kills_now = journal.entries(&["LIFELINE_ACTION=kill"])?;
    assert_eq!(kills_now.len(), 1, "one entry per decision: {kills_now:#?}");
    let k = &kills[0];
    eprintln!("kill entry: {k:#}");
    assert!(
        field(k, "MESSAGE").starts_with("stalled socket 198.51.100.1:"),
        "{k}"
    );
    assert_eq!(field(k, "PRIORITY"), "4", "warning");
    assert_eq!(field(k, "TARGET"), "lifeline::decision");
    assert_eq!(field(k, "LIFELINE_PEER"), "198.51.100.2:6443");
    assert_eq!(field(k, "LIFELINE_LOCAL"), format!("198.51.100.1:{port}"));
    assert_eq!(field(k, "LIFELINE_VERDICT"), "stalled");
    assert_eq!(field(k, "LIFELINE_OUTCOME"), "killed");
    assert_eq!(
        number(k, "LIFELINE_OWNER_PID"),
        u64::from(client.proc.pid())
    );
    // The stall's evidence: 8 RTOs in a row (linear timeouts), or the whole stall-timeout.
    assert!(
        number(k, "LIFELINE_UNANSWERED_RTOS") >= 8 || number(k, "LIFELINE_LAST_ACK_AGE_MS") >= 4000,
        "{k}"
    );
    assert!(number(k, "LIFELINE_UNACKED_SEGS") >= 1, "{k}");
    assert!(number(k, "LIFELINE_RETRANSMITS") >= 1, "{k}");
    // Also findable by the decision target, and nothing went to stderr.
    assert_eq!(journal.entries(&["TARGET=lifeline::decision"])?.len(), 1);
    agent.signal(libc::SIGTERM);
    assert!(
        agent
            .wait_timeout(Duration::from_secs(10))
            .is_some_and(|s| s.success())
    );
    assert_eq!(agent.stderr_text(), "", "logs went to stderr");
    Ok(())
}
