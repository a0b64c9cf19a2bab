//! tracing setup: journald under systemd, otherwise stderr (human or JSON lines).
//! `log` records (aya, aya-log's forwarding of the probe's messages) are bridged into
//! tracing by tracing-subscriber's `tracing-log` feature.

use anyhow::{Context as _, Result};
use tracing_subscriber::{
    EnvFilter, Layer, layer::SubscriberExt as _, util::SubscriberInitExt as _,
};

use crate::settings::LogTarget;

/// systemd sets `JOURNAL_STREAM` to stderr's `dev:inode` when stderr is the journal
/// (systemd.exec(5)); a shell with an inherited variable does not match.
fn stderr_is_journal() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(v) = std::env::var("JOURNAL_STREAM") else {
        return false;
    };
    let Ok(meta) = std::fs::metadata("/proc/self/fd/2") else {
        return false;
    };
    v == format!("{}:{}", meta.dev(), meta.ino())
}

/// Install the global subscriber.
///
/// # Errors
/// When journald is asked for and not reachable.
pub(crate) fn init(target: LogTarget) -> Result<()> {
    let filter = EnvFilter::try_from_env("LIFELINE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let target = match target {
        LogTarget::Auto if stderr_is_journal() => LogTarget::Journald,
        LogTarget::Auto => LogTarget::Stderr,
        t => t,
    };
    let layer = match target {
        LogTarget::Journald => tracing_journald::layer()
            .context("journald is not reachable at /run/systemd/journal/socket")?
            .with_field_prefix(Some("LIFELINE".to_owned()))
            .with_priority_mappings(journal_priorities())
            .boxed(),
        LogTarget::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .boxed(),
        // Colours only for a person at a terminal: never escape codes in files and pipes.
        _ => tracing_subscriber::fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init()
        .context("installing the logger")
}

/// syslog's meaning of the levels: info is Informational (6), not the crate's default of
/// Notice (5), so `journalctl -p notice` shows warnings and decisions, not every ready line.
fn journal_priorities() -> tracing_journald::PriorityMappings {
    use tracing_journald::Priority;
    let mut p = tracing_journald::PriorityMappings::new();
    p.info = Priority::Informational;
    p.debug = Priority::Debug;
    p.trace = Priority::Debug;
    p
}
