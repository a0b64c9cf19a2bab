//! Labs side by side: a few worker threads take jobs from one queue. Each lab is its own set
//! of namespaces, so labs never see each other; the number of workers is kept modest because
//! the machine has two cores and the agent's timing must not suffer from our load.
//! Ctrl-C (SIGINT/SIGTERM) only raises a flag: every wait loop checks it and returns an
//! error, so the guards (namespaces, processes, cgroups) are dropped and nothing is left.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

use anyhow::{Result, bail};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Ctrl-C and SIGTERM set the flag instead of killing us before the guards run.
pub(crate) fn install_signal_flag() {
    let handler = on_signal as extern "C" fn(libc::c_int);
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, handler as libc::sighandler_t) };
    }
}

/// An error once the user asked us to stop.
pub(crate) fn check_interrupted() -> Result<()> {
    if INTERRUPTED.load(Ordering::Relaxed) {
        bail!("interrupted");
    }
    Ok(())
}

/// Runs `work` on every job with `workers` threads; `done` sees each result as it arrives
/// (on this thread, for the progress lines). Results come back in job order.
pub(crate) fn run_all<J, R>(
    jobs: Vec<J>,
    workers: usize,
    work: impl Fn(&J) -> Result<R> + Sync,
    mut done: impl FnMut(&J, &Result<R>),
) -> Vec<(J, Result<R>)>
where
    J: Send + Sync,
    R: Send,
{
    let n = jobs.len();
    let queue: Mutex<VecDeque<(usize, &J)>> = Mutex::new(jobs.iter().enumerate().collect());
    let mut slots: Vec<Option<Result<R>>> = (0..n).map(|_| None).collect();
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..workers.max(1) {
            let (tx, queue, work) = (tx.clone(), &queue, &work);
            s.spawn(move || {
                loop {
                    let next = queue
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .pop_front();
                    let Some((i, job)) = next else { break };
                    let r = check_interrupted().and_then(|()| work(job));
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            done(&jobs[i], &r);
            slots[i] = Some(r);
        }
    });
    jobs.into_iter()
        .zip(slots)
        .map(|(j, r)| (j, r.unwrap_or_else(|| Err(anyhow::anyhow!("not run")))))
        .collect()
}
