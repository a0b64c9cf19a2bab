//! The client's side of `lifeline status`: one connection to the daemon's socket, its
//! answer parsed into a [`Snapshot`] or copied through as JSON.

use std::{
    io::{Read as _, Write},
    os::unix::net::UnixStream,
    path::Path,
    time::Duration,
};

use anyhow::{Context as _, Result, anyhow};

use super::Snapshot;

/// A daemon that cannot even accept (out of descriptors, stopped) must not hang us: its
/// server answers or closes within `ANSWER_TIMEOUT`, so twice that is no answer at all.
fn patience() -> Duration {
    super::server::ANSWER_TIMEOUT * 2
}

/// Read the running daemon's snapshot.
///
/// # Errors
/// When no daemon answers at `path`, or its answer is not a snapshot.
pub(crate) fn fetch(path: &Path) -> Result<Snapshot> {
    fetch_within(path, patience())
}

/// `fetch`, each read waiting at most `timeout` (`lifeline check` must not hang on a
/// daemon that accepts and never answers).
///
/// # Errors
/// As `fetch`, and when a read times out.
pub(crate) fn fetch_within(path: &Path, timeout: Duration) -> Result<Snapshot> {
    let mut body = Vec::new();
    copy_from(connect(path, timeout)?, path, timeout, &mut body)?;
    serde_json::from_slice(&body).context("the daemon's status is not valid JSON")
}

fn connect(path: &Path, timeout: Duration) -> Result<UnixStream> {
    let conn = UnixStream::connect(path).map_err(|e| {
        anyhow!(
            "cannot reach the lifeline daemon at {}: {e} (is `lifeline run` running?)",
            path.display()
        )
    })?;
    conn.set_read_timeout(Some(timeout))
        .context("setting the status socket's read timeout")?;
    Ok(conn)
}

/// `lifeline status --json`: the daemon's answer copied to `out` as it arrives, so 100,000
/// sockets' 35 MB are neither parsed nor held only to be printed again. Nothing is written
/// unless the answer starts as a JSON object.
///
/// # Errors
/// When no daemon answers at `path`, or its answer is not a JSON object.
pub(super) fn copy_json(path: &Path, out: &mut impl Write) -> Result<()> {
    copy_from(connect(path, patience())?, path, patience(), out)
}

fn copy_from(
    mut conn: UnixStream,
    path: &Path,
    timeout: Duration,
    out: &mut impl Write,
) -> Result<()> {
    let mut buf = vec![0u8; 1 << 16];
    let mut first = true;
    let mut last = 0u8;
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                anyhow::bail!(
                    "the lifeline daemon at {} sent nothing for {} s (busy, stopped, or out of descriptors)",
                    path.display(),
                    timeout.as_secs()
                )
            }
            Err(e) => return Err(e).context("reading the daemon's status"),
        };
        anyhow::ensure!(
            !first || buf[0] == b'{',
            "the daemon's status is not a JSON object"
        );
        first = false;
        last = buf[n - 1];
        out.write_all(&buf[..n]).context("writing the status")?;
    }
    anyhow::ensure!(
        !first,
        "the lifeline daemon at {} closed the connection without an answer (it serves {} clients at once, or its loop did not answer within {} s): try again",
        path.display(),
        super::server::MAX_CLIENTS,
        super::server::ANSWER_TIMEOUT.as_secs()
    );
    anyhow::ensure!(last == b'}', "the daemon's status is not a JSON object");
    Ok(())
}

/// `lifeline status --json`: the answer on stdout, then a newline.
///
/// # Errors
/// As `copy_json`.
pub(crate) fn print_json(path: &Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
    copy_json(path, &mut out)?;
    writeln!(out).context("writing the status")
}
