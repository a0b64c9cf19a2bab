//! The status socket's server, on a thread of its own: each client's request goes to the
//! daemon's loop, which builds the answer with every socket's row between two sweeps
//! (`daemon/table.rs`); this thread writes it with blocking writes, so a slow client never
//! holds the sweeps, and a sweep never formats rows nobody asked for.

use std::{
    io::Write as _,
    os::unix::net::UnixListener,
    path::Path,
    sync::mpsc::{SyncSender, sync_channel},
    time::Duration,
};

use anyhow::{Context as _, Result};
use tokio::sync::mpsc::UnboundedSender;

/// A client that reads slower than this per write is dropped, so one stuck client cannot
/// keep the others waiting for ever.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client waits for the daemon's loop (busy in a sweep) before it gets no answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// A request for the status: the daemon's loop answers on it with the JSON.
pub type Ask = SyncSender<Vec<u8>>;

/// Serve a fresh answer to every client that connects. The thread ends with the process
/// (it sits in `accept`).
///
/// # Errors
/// When the socket cannot be created.
pub fn serve(path: &Path, asks: UnboundedSender<Ask>) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // A socket file left by a previous, killed agent would make bind fail; anything else
    // there is not ours to remove.
    crate::report::status::socket::clear(path)?;
    let listener =
        UnixListener::bind(path).with_context(|| format!("cannot listen on {}", path.display()))?;
    std::thread::Builder::new()
        .name("status".into())
        .spawn(move || serve_forever(&listener, &asks))
        .context("starting the status server thread")?;
    Ok(())
}

fn serve_forever(listener: &UnixListener, asks: &UnboundedSender<Ask>) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        // No answer (the loop has ended, or is stuck): the client sees an empty reply and
        // says the daemon's status is not a JSON object.
        let t0 = std::time::Instant::now();
        let Some(body) = ask(asks) else { continue };
        let built = t0.elapsed();
        let _ = conn.set_write_timeout(Some(WRITE_TIMEOUT));
        let _ = conn.write_all(&body);
        let _ = conn.shutdown(std::net::Shutdown::Write);
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        tracing::debug!(
            bytes = body.len(),
            answer_ms = ms(built),
            written_ms = ms(t0.elapsed()),
            "status answered"
        );
    }
}

fn ask(asks: &UnboundedSender<Ask>) -> Option<Vec<u8>> {
    let (tx, rx) = sync_channel(1);
    asks.send(tx).ok()?;
    rx.recv_timeout(ANSWER_TIMEOUT).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_gets_the_loop_s_answer() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Ask>();
        let loop_side = std::thread::spawn(move || {
            let reply = rx.blocking_recv().unwrap();
            reply.send(b"{}".to_vec()).unwrap();
            drop(rx);
        });
        assert_eq!(ask(&tx).as_deref(), Some(&b"{}"[..]));
        loop_side.join().unwrap();
        assert!(ask(&tx).is_none(), "the loop has ended: no answer");
    }
}
