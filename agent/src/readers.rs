//! Tasks that drain the probe's ring buffers, woken by their fds through tokio's `AsyncFd`
//! rather than polled.

use std::sync::Arc;

use anyhow::Result;
use tokio::{
    io::{Interest, unix::AsyncFd},
    sync::Notify,
};

use crate::probe::Probe;

/// Wake the sweep as soon as a watched socket enters trouble (one ring-buffer event per
/// episode), so a peer probe starts within milliseconds rather than at the next sweep.
pub fn spawn_trouble_reader(probe: &mut Probe, wake: &Arc<Notify>) -> Result<()> {
    let ring = probe.take_trouble()?;
    // SAFETY: the AsyncFd owns the ring buffer, which owns its fd, so the fd stays open for
    // as long as it is registered.
    let mut fd = unsafe { AsyncFd::register_with_interest(ring, Interest::READABLE) }
        .map_err(|e| anyhow::anyhow!("watching the probe's trouble buffer: {e}"))?;
    let wake = Arc::clone(wake);
    tokio::spawn(async move {
        while let Ok(mut guard) = fd.readable_mut().await {
            let mut any = false;
            while guard.get_inner_mut().next().is_some() {
                any = true;
            }
            guard.clear_ready();
            if any {
                wake.notify_one();
            }
        }
    });
    Ok(())
}

/// Forward the probe's aya-log messages (map full, ...) into tracing, woken by the
/// ring buffer's fd rather than polled.
pub fn spawn_probe_logger(probe: &mut Probe) -> Result<()> {
    let logger = probe.take_logger()?;
    // SAFETY: the AsyncFd owns the logger, which owns the ring buffer's fd, so the fd
    // stays open for as long as it is registered.
    let mut fd = unsafe { AsyncFd::register_with_interest(logger, Interest::READABLE) }
        .map_err(|e| anyhow::anyhow!("watching the probe's log buffer: {e}"))?;
    tokio::spawn(async move {
        while let Ok(mut guard) = fd.readable_mut().await {
            guard.get_inner_mut().flush();
            guard.clear_ready();
        }
    });
    Ok(())
}
