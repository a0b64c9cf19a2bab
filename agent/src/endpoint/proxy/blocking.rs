//! The proxy's files and `/proc` are read off the agent's only runtime thread and with a
//! deadline: a file system that never answers (a stalled FUSE mount in the proxy's root)
//! must not stop sweeps, kills, status and the watchdog. At most one such read is in flight:
//! a read past its deadline keeps its thread until it returns, and no other is started
//! meanwhile, so a hung read costs one thread, never one per attempt.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

/// How long one look at the proxy (its connections, identity and files) may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(3);

static BUSY: AtomicBool = AtomicBool::new(false);

/// Why a look did not answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Late {
    /// The previous look has still not returned.
    Busy,
    /// This one did not return within the deadline.
    Deadline,
}

impl std::fmt::Display for Late {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Busy => write!(
                f,
                "the previous look at the proxy has not returned yet (it took longer than {DEADLINE:?})"
            ),
            Self::Deadline => write!(
                f,
                "the look at the proxy did not return within {DEADLINE:?} (a file that does not answer?)"
            ),
        }
    }
}

/// Takes the one place, or says it is taken; the guard gives it back when the work ends.
fn take() -> Result<Release, Late> {
    if BUSY.swap(true, Ordering::AcqRel) {
        return Err(Late::Busy);
    }
    Ok(Release)
}

struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        BUSY.store(false, Ordering::Release);
    }
}

/// `work` on a thread of tokio's blocking pool, awaited at most `DEADLINE`.
///
/// # Errors
/// As `Late` says.
pub(crate) async fn run<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Late> {
    let guard = take()?;
    let task = tokio::task::spawn_blocking(move || {
        let _guard = guard;
        work()
    });
    match tokio::time::timeout(DEADLINE, task).await {
        Ok(Ok(v)) => Ok(v),
        // A panic in the work: nothing came back within the deadline either.
        Ok(Err(_)) | Err(_) => Err(Late::Deadline),
    }
}

/// `work` on a thread of its own, waited for at most `DEADLINE`: before the runtime starts.
///
/// # Errors
/// As `Late` says.
pub(crate) fn run_sync<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Late> {
    let guard = take()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("proxy-look".into())
        .spawn(move || {
            let _guard = guard;
            let _ = tx.send(work());
        });
    if spawned.is_err() {
        return Err(Late::Deadline);
    }
    rx.recv_timeout(DEADLINE).map_err(|_| Late::Deadline)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test for both: they share the one place.
    #[test]
    fn a_hung_look_is_cut_at_the_deadline_and_holds_the_place_until_it_returns() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let t0 = std::time::Instant::now();
        let late = run_sync(move || {
            let _ = rx.recv_timeout(Duration::from_secs(30));
        });
        assert_eq!(late, Err(Late::Deadline));
        assert!(t0.elapsed() < DEADLINE + Duration::from_secs(1));
        assert_eq!(
            run_sync(|| 1),
            Err(Late::Busy),
            "the hung one still holds it"
        );
        drop(tx);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got = rt.block_on(async {
            for _ in 0..50 {
                if let Ok(v) = run(|| 7).await {
                    return Some(v);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            None
        });
        assert_eq!(got, Some(7), "free again once the hung look returned");
    }
}
