//! The row of `lifeline check` about the agent already running with these settings: what
//! it could not keep (`report::status::Capacity`), read from its status socket. A preflight
//! on a node where lifeline runs should say when sockets went unwatched or news was lost.

use std::{path::Path, time::Duration};

use super::row::Row;
use crate::report::status::fetch_within;

/// Each read of the agent's answer waits this long at most.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

pub fn capacity_row(socket: &Path) -> Row {
    let s = match fetch_within(socket, Some(READ_TIMEOUT)) {
        Ok(s) => s,
        // Not running is normal for a preflight.
        Err(e) if !socket.exists() => {
            return Row::pass("agent capacity", format!("no agent running ({e:#})"));
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
