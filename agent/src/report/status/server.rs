//! The status socket's server, on a thread of its own: each client's request goes to the
//! daemon's loop, which builds the answer with every socket's row between two sweeps
//! (`daemon/table.rs`); a thread per client writes it with blocking writes, so a slow client
//! never holds the sweeps, and a sweep never formats rows nobody asked for.
//!
//! Bounded (report/gate.rs): at most `MAX_CLIENTS` clients at once, each with a total
//! deadline; the socket is its owner's alone (mode 0600 whatever the umask). The server
//! reads nothing: the connection is the request, so there is no request to bound in size or
//! time. What a client can hold is a place while its answer is written: at most
//! `ANSWER_TIMEOUT` waiting for the loop, then `WRITE_DEADLINE` for the whole answer.

use std::{
    io::{self, Write as _},
    os::{
        fd::AsRawFd as _,
        unix::{ffi::OsStrExt as _, net::UnixListener, net::UnixStream},
    },
    path::Path,
    sync::mpsc::{SyncSender, sync_channel},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use tokio::sync::mpsc::UnboundedSender;

use crate::report::gate::Gate;

/// Clients served at once, each on a thread of its own: `lifeline status` needs one, a
/// monitoring script another.
pub(crate) const MAX_CLIENTS: usize = 4;

/// The whole answer (35 MB at 100,000 sockets, read by `lifeline status --json` in under a
/// second) must be taken within this, however it is split: a client that reads slowly, or
/// not at all, is dropped then.
const WRITE_DEADLINE: Duration = Duration::from_secs(30);

/// How long a client waits for the daemon's loop (busy in a sweep) before it gets no answer.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections waiting to be accepted; the accept loop only hands them out (or closes them).
const BACKLOG: i32 = 64;

/// A request for the status: the daemon's loop answers on it with the JSON.
pub(crate) type Ask = SyncSender<Vec<u8>>;

/// Serve a fresh answer to every client that connects, within `gate`. The thread ends with
/// the process (it sits in `accept`).
///
/// # Errors
/// When the socket cannot be created.
pub(crate) fn serve(path: &Path, asks: UnboundedSender<Ask>, gate: Gate) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // A socket file left by a previous, killed agent would make bind fail; anything else
    // there is not ours to remove.
    crate::report::status::socket::clear(path)?;
    let listener = crate::node::unix::listen_owner_only(path.as_os_str().as_bytes(), BACKLOG)
        .map(UnixListener::from)
        .with_context(|| format!("cannot listen on {}", path.display()))?;
    std::thread::Builder::new()
        .name("status".into())
        .spawn(move || serve_forever(&listener, &asks, &gate))
        .context("starting the status server thread")?;
    Ok(())
}

fn serve_forever(listener: &UnixListener, asks: &UnboundedSender<Ask>, gate: &Gate) {
    loop {
        let conn = match listener.accept() {
            Ok((conn, _)) => conn,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                std::thread::sleep(gate.accept_failed(&e));
                continue;
            }
        };
        // Past the cap the connection is dropped here: closed at once.
        let Some(permit) = gate.admit() else { continue };
        let (asks, client_gate) = (asks.clone(), gate.clone());
        let spawned = std::thread::Builder::new()
            .name("status-client".into())
            .spawn(move || {
                serve_one(conn, &asks, &client_gate);
                drop(permit);
            });
        // No thread: the closure, with the connection and its place, is dropped unrun.
        if spawned.is_err() {
            gate.refuse();
        }
    }
}

fn serve_one(mut conn: UnixStream, asks: &UnboundedSender<Ask>, gate: &Gate) {
    // No answer (the loop has ended, or is stuck): the client sees an empty reply and
    // says the daemon did not answer.
    let t0 = Instant::now();
    let Some(body) = ask(asks) else { return };
    let built = t0.elapsed();
    let written = write_within(&mut conn, &body, Instant::now() + WRITE_DEADLINE);
    if written
        .as_ref()
        .is_err_and(|e| e.kind() == io::ErrorKind::TimedOut)
    {
        gate.timed_out();
    }
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    tracing::debug!(
        bytes = body.len(),
        answer_ms = ms(built),
        written_ms = ms(t0.elapsed()),
        error = written.err().map(|e| e.to_string()),
        "status answered"
    );
    // The answer (35 MB at 100,000 sockets) and what built it are freed.
    drop(body);
    crate::node::memory::release_freed();
}

/// Writes all of `body` by `deadline`, non-blocking, each wait for room only as long as what
/// is left of it. (A blocking write's `SO_SNDTIMEO` would not do: Unix stream sockets apply
/// it afresh to every buffer of one write, so a client that takes a little now and then could
/// stretch a single write for ever; `sock_alloc_send_pskb` in
/// <https://github.com/torvalds/linux/blob/v6.18/net/core/sock.c>.)
fn write_within(conn: &mut UnixStream, mut body: &[u8], deadline: Instant) -> io::Result<()> {
    conn.set_nonblocking(true)?;
    while !body.is_empty() {
        match conn.write(body) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => body = &body[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                wait_writable(conn, left)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Waits until `conn` takes more, it fails, or `left` passes (then the next write says so).
fn wait_writable(conn: &UnixStream, left: Duration) -> io::Result<()> {
    let mut fd = libc::pollfd {
        fd: conn.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // Rounded up, so that a wait never ends just before the deadline and spins.
    let ms = libc::c_int::try_from(left.as_millis() + 1).unwrap_or(libc::c_int::MAX);
    // SAFETY: poll(2) on one valid pollfd that lives across the call.
    if unsafe { libc::poll(&raw mut fd, 1, ms) } < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

fn ask(asks: &UnboundedSender<Ask>) -> Option<Vec<u8>> {
    let (tx, rx) = sync_channel(1);
    asks.send(tx).ok()?;
    rx.recv_timeout(ANSWER_TIMEOUT).ok()
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
