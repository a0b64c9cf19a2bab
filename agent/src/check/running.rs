//! The row of `lifeline check` about the agent already running with these settings: what
//! it could not keep (`report::status::Capacity`), read from its status socket. A preflight
//! on a node where lifeline runs should say when sockets went unwatched or news was lost.

use std::{path::Path, time::Duration};

use super::row::Row;
use crate::report::status::fetch_within;

/// Each read of the agent's answer waits this long at most.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) fn capacity_row(socket: &Path) -> Row {
    let s = match fetch_within(socket, READ_TIMEOUT) {
        Ok(s) => s,
        // Not running is normal for a preflight.
        Err(_) if !socket.exists() => {
            return Row::pass(
                "agent capacity",
                format!("no agent answers at {}", socket.display()),
            );
        }
        Err(e) => return Row::warn("agent capacity", format!("{e:#}")),
    };
    let warnings = s.capacity.warnings(s.sockets_full);
    let skipped = s.capacity.owners_skipped;
    if warnings.is_empty() {
        Row::pass(
            "agent capacity",
            format!(
                "the running agent lost nothing: {} watched, {skipped} connect(s) to watched ports skipped (no target, not to an endpoint address)",
                s.watched
            ),
        )
    } else {
        Row::warn("agent capacity", warnings.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use std::{io::Write as _, os::unix::net::UnixListener};

    use super::*;
    use crate::check::row::Level;

    /// One answer from a stand-in agent on a socket of the test's own.
    fn row_for(name: &str, answer: &'static str) -> Row {
        // A directory per row, removed with its socket: nothing of the test stays in /tmp.
        let dir =
            std::env::temp_dir().join(format!("lifeline-check-{}-{name}", std::process::id()));
        let _ = std::fs::create_dir(&dir);
        let path = dir.join(format!("{name}.sock"));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).expect("bind");
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().expect("accept");
            conn.write_all(answer.as_bytes()).expect("write");
        });
        let row = capacity_row(&path);
        server.join().expect("the stand-in agent");
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_dir(&dir);
        row
    }

    #[test]
    fn losses_of_the_running_agent_warn_and_none_pass() {
        let lost = row_for(
            "lost",
            r#"{"stall_timeout_ms":1,"silent_timeout_ms":null,"kills":0,"holds":0,"endpoint_source":null,"endpoints":[],"sockets_full":0,"capacity":{"owners_skipped":9,"endpoint_quota_full":16,"news_lost":0,"inbox_dropped":0}}"#,
        );
        assert_eq!(lost.result, Level::Warn, "{}", lost.detail);
        assert!(
            lost.detail
                .starts_with("16 socket(s) watched only for their peer"),
            "{}",
            lost.detail
        );
        let fine = row_for(
            "fine",
            r#"{"stall_timeout_ms":1,"silent_timeout_ms":null,"kills":0,"holds":0,"endpoint_source":null,"endpoints":[],"sockets_full":0,"watched":2,"capacity":{"owners_skipped":9,"endpoint_quota_full":0,"news_lost":0,"inbox_dropped":0}}"#,
        );
        assert_eq!(fine.result, Level::Pass, "{}", fine.detail);
        assert!(
            fine.detail.contains("2 watched, 9 connect(s)"),
            "{}",
            fine.detail
        );
        let none = capacity_row(Path::new("/nonexistent/lifeline.sock"));
        assert_eq!(none.result, Level::Pass, "{}", none.detail);
    }
}
