//! Round-robin DNS: dnsmasq answers a rotating subset of the API addresses, as a DNS server
//! in front of a big load balancer does. A bounded background thread rewrites the hosts file
//! and sends SIGHUP every `every`; the guard stops and joins it on drop.

use std::marker::PhantomData;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};

use crate::infra::dns::{Dnsmasq, write_hosts};
use crate::infra::util::mono_ms;

/// Each set served, with the `CLOCK_MONOTONIC` ms it was served from.
pub(crate) type Applied = Arc<Mutex<Vec<(u64, Vec<IpAddr>)>>>;

/// A running rotation. `applied` lists each set with the time it was served from. It borrows
/// the `Dnsmasq`, so dnsmasq cannot be stopped (and its pid reused) while the thread signals it.
pub struct Rotation<'a> {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pub applied: Applied,
    _dns: PhantomData<&'a Dnsmasq>,
}

impl Dnsmasq {
    /// Serves `sets[0]`, `sets[1]`, ... in turn, each for `every`, cycling, for at most
    /// `total`. Every address of the union must be absent for at most `max_absence`, checked
    /// here, so the scenario's claim (no address looks gone for the orphan grace) holds by
    /// construction.
    ///
    /// # Errors
    /// When the sets break `max_absence`, or dnsmasq is not running.
    pub fn rotate(
        &self,
        sets: Vec<Vec<IpAddr>>,
        every: Duration,
        total: Duration,
        max_absence: Duration,
    ) -> Result<Rotation<'_>> {
        ensure!(!sets.is_empty(), "no sets to rotate");
        check_absence(&sets, every, max_absence)?;
        let pid = i32::try_from(self.pid().context("dnsmasq is stopped")?)?;
        let stop = Arc::new(AtomicBool::new(false));
        let applied: Applied = Arc::default();
        let (flag, log, hosts) = (stop.clone(), Arc::clone(&applied), self.hosts.clone());
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let rounds = total.as_millis() / every.as_millis().max(1) + 1;
            for (round, set) in sets.iter().cycle().enumerate().take(rounds_usize(rounds)) {
                if flag.load(Ordering::Relaxed) || start.elapsed() >= total {
                    break;
                }
                if write_hosts(&hosts, set).is_ok() {
                    // SAFETY: kill(2) on dnsmasq, which the Dnsmasq guard (borrowed by the
                    // test for the rotation's lifetime) keeps running.
                    unsafe { libc::kill(pid, libc::SIGHUP) };
                    lock(&log).push((mono_ms(), set.clone()));
                }
                // Sleep in slices so a dropped guard stops the thread within 100 ms.
                let next = every * u32::try_from(round + 1).unwrap_or(u32::MAX);
                while !flag.load(Ordering::Relaxed) && start.elapsed() < next.min(total) {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        });
        Ok(Rotation {
            stop,
            thread: Some(thread),
            applied,
            _dns: PhantomData,
        })
    }
}

impl Rotation<'_> {
    /// Stops the rotation and returns the sets served, with their times.
    #[must_use]
    pub fn finish(mut self) -> Vec<(u64, Vec<IpAddr>)> {
        self.halt();
        lock(&self.applied).clone()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Rotation<'_> {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Every address of the union appears again within `max_absence` of leaving, cyclically.
fn check_absence(sets: &[Vec<IpAddr>], every: Duration, max_absence: Duration) -> Result<()> {
    let n = sets.len();
    let all: std::collections::BTreeSet<IpAddr> = sets.iter().flatten().copied().collect();
    for addr in all {
        // The longest cyclic run of sets without addr.
        let longest = (0..n)
            .map(|start| {
                (0..n)
                    .take_while(|k| !sets[(start + k) % n].contains(&addr))
                    .count()
            })
            .max()
            .unwrap_or(0);
        let absent = every * u32::try_from(longest)?;
        ensure!(
            absent <= max_absence,
            "{addr} would be absent for {absent:?} (> {max_absence:?})"
        );
    }
    Ok(())
}

fn rounds_usize(rounds: u128) -> usize {
    usize::try_from(rounds).unwrap_or(usize::MAX)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
