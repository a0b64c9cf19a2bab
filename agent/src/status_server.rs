//! The status socket's server, on a thread of its own: the sweep runs on the single-threaded
//! runtime and holds it for as long as it takes (hundreds of ms with 100,000 sockets), so a
//! server task there could write only one socket buffer's worth (a few hundred KiB) between
//! two sweeps, and a 30 MB answer took half a minute. Here the answer is written with
//! blocking writes, the sweep never waits for a client, and each published snapshot is
//! serialised once, at the first request after it, not once per request.

use std::{io::Write as _, os::unix::net::UnixListener, path::Path, sync::Arc, time::Duration};

use anyhow::{Context as _, Result};
use tokio::sync::watch;

use crate::status::Snapshot;

/// A client that reads slower than this per write is dropped, so one stuck client cannot
/// keep the others waiting for ever.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve the latest snapshot to every client that connects. The thread ends with the
/// process (it sits in `accept`).
///
/// # Errors
/// When the socket cannot be created.
pub fn serve(path: &Path, rx: watch::Receiver<Snapshot>) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // A socket file left by a previous, killed agent would make bind fail; anything else
    // there is not ours to remove.
    crate::status_socket::clear(path)?;
    let listener =
        UnixListener::bind(path).with_context(|| format!("cannot listen on {}", path.display()))?;
    std::thread::Builder::new()
        .name("status".into())
        .spawn(move || serve_forever(&listener, rx))
        .context("starting the status server thread")?;
    Ok(())
}

fn serve_forever(listener: &UnixListener, mut rx: watch::Receiver<Snapshot>) {
    let mut body: Option<Arc<Vec<u8>>> = None;
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let body = current(&mut rx, &mut body);
        let _ = conn.set_write_timeout(Some(WRITE_TIMEOUT));
        let _ = conn.write_all(&body);
        let _ = conn.shutdown(std::net::Shutdown::Write);
    }
}

/// The JSON of the latest snapshot, serialised again only when a newer one was published.
/// Serialised straight from the channel, under its read lock: a copy of 100,000 rows first
/// would stay in this thread's malloc arena (over 100 MB of RSS); the sweep's next
/// `send_replace` waits at most one serialisation, once per snapshot that is asked for.
fn current(rx: &mut watch::Receiver<Snapshot>, cached: &mut Option<Arc<Vec<u8>>>) -> Arc<Vec<u8>> {
    let changed = rx.has_changed().unwrap_or(false);
    match cached {
        Some(body) if !changed => Arc::clone(body),
        _ => {
            // The last answer's size, so the buffer does not grow by doubling through 30 MB.
            let hint = cached.as_ref().map_or(0, |b| b.len() + b.len() / 8);
            let mut out = Vec::with_capacity(hint);
            let _ = serde_json::to_writer(&mut out, &*rx.borrow_and_update());
            let body = Arc::new(out);
            *cached = Some(Arc::clone(&body));
            body
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_serialised_once_until_the_next_one() {
        let (tx, mut rx) = watch::channel(Snapshot::default());
        let mut cached = None;
        let first = current(&mut rx, &mut cached);
        let again = current(&mut rx, &mut cached);
        assert!(Arc::ptr_eq(&first, &again));
        tx.send_replace(Snapshot {
            kills: 3,
            ..Snapshot::default()
        });
        let next = current(&mut rx, &mut cached);
        assert!(!Arc::ptr_eq(&first, &next));
        let snap: Snapshot = serde_json::from_slice(&next).unwrap();
        assert_eq!(snap.kills, 3);
    }
}
