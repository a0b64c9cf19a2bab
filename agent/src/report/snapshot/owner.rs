//! Whether a watched socket still has its owner, for `lifeline status`. The kernel says
//! whether any process holds the socket: `sock_diag` reports inode 0 once the last descriptor
//! is closed (`sock_orphan()` clears `sk_socket`, and `sock_i_ino()` then reads 0;
//! <https://github.com/torvalds/linux/blob/v6.18/net/core/sock.c>), whether the owner closed it
//! or died. Whether the process the probe recorded is still alive is `/proc/PID`, and that it
//! is the same process and not a reused pid is its start time (`/proc/PID/stat`, field 22,
//! in clock ticks of `CLOCK_BOOTTIME`): the owner started before its socket was established.

use std::{collections::HashMap, io::ErrorKind, os::unix::fs::MetadataExt as _};

use serde::{Deserialize, Serialize};

use crate::{judge::Record, kernel::diag::DiagSock};

/// The inode of the initial pid namespace (`PROC_PID_INIT_INO` in `include/linux/proc_ns.h`):
/// the probe records pids as the initial namespace numbers them, so `/proc` can be asked
/// about them only from there (the `DaemonSet` runs with `hostPID`).
const PROC_PID_INIT_INO: u64 = 0xEFFF_FFFC;

/// What became of a socket's owner: a row's `owner_state`, by its label (left out while the
/// owner holds it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum OwnerState {
    /// Held by a process (the recorded one, as far as can be told).
    #[default]
    #[serde(rename = "holds")]
    Holds,
    /// The recorded owner has exited, but another process still holds the socket (an
    /// inherited or passed descriptor).
    #[serde(rename = "exited")]
    Exited,
    /// No process holds the socket: the kernel is closing it on its own.
    #[serde(rename = "no owner")]
    Nobody,
}

impl OwnerState {
    /// The row's `owner_state`; `None` while the owner holds it.
    #[must_use]
    pub(crate) const fn label(self) -> Option<&'static str> {
        match self {
            Self::Holds => None,
            Self::Exited => Some("exited"),
            Self::Nobody => Some("no owner"),
        }
    }

    /// Whether a row leaves `owner_state` out.
    #[allow(
        clippy::trivially_copy_pass_by_ref,
        reason = "serde's skip_serializing_if passes the field by reference"
    )]
    #[must_use]
    pub(crate) const fn holds(&self) -> bool {
        matches!(self, Self::Holds)
    }
}

/// One status request's owner checks: each pid's start time is read once.
pub(crate) struct OwnerChecks {
    /// `/proc` numbers pids as the probe does.
    procfs: bool,
    /// `CLOCK_BOOTTIME` less `CLOCK_MONOTONIC` (time spent suspended), in ns.
    suspended_ns: u64,
    tick_ns: u64,
    starts: HashMap<u32, Start>,
}

impl OwnerChecks {
    #[must_use]
    pub(crate) fn new() -> Self {
        let procfs =
            std::fs::metadata("/proc/self/ns/pid").is_ok_and(|m| m.ino() == PROC_PID_INIT_INO);
        // SAFETY: sysconf has no memory effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let hz = u64::try_from(hz).ok().filter(|h| *h > 0).unwrap_or(100);
        Self {
            procfs,
            suspended_ns: clock_ns(libc::CLOCK_BOOTTIME)
                .saturating_sub(clock_ns(libc::CLOCK_MONOTONIC)),
            tick_ns: 1_000_000_000 / hz,
            starts: HashMap::new(),
        }
    }

    /// The owner of the socket recorded as `rec`, seen by the kernel as `kernel`.
    pub(crate) fn of(&mut self, rec: &Record, kernel: Option<&DiagSock>) -> OwnerState {
        if kernel.is_some_and(|k| k.inode == 0) {
            return OwnerState::Nobody;
        }
        if rec.owner_pid == 0 || !self.procfs {
            return OwnerState::Holds;
        }
        let start = *self
            .starts
            .entry(rec.owner_pid)
            .or_insert_with(|| started_ns(rec.owner_pid, self.tick_ns));
        // The start time is rounded down to a tick; one tick more covers reading the clocks.
        let established = rec.established.as_nanos() + self.suspended_ns + self.tick_ns;
        match start {
            Start::Gone => OwnerState::Exited,
            Start::At(t) if t > established => OwnerState::Exited,
            Start::At(_) | Start::Unknown => OwnerState::Holds,
        }
    }
}

#[derive(Clone, Copy)]
enum Start {
    /// No such process.
    Gone,
    /// Started at this `CLOCK_BOOTTIME` ns.
    At(u64),
    /// Cannot be told: assume nothing.
    Unknown,
}

fn started_ns(pid: u32, tick_ns: u64) -> Start {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => crate::endpoint::proc_start_time(&stat)
            .map_or(Start::Unknown, |t| Start::At(t.saturating_mul(tick_ns))),
        Err(e) if e.kind() == ErrorKind::NotFound => Start::Gone,
        Err(_) => Start::Unknown,
    }
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; both clocks exist on every kernel lifeline runs on.
    unsafe { libc::clock_gettime(clock, &raw mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alive_exited_reused_and_orphaned() {
        let mut owners = OwnerChecks::new();
        assert!(
            owners.procfs,
            "the unit tests run in the initial pid namespace"
        );
        let me = Record {
            owner_pid: std::process::id(),
            established: crate::kernel::clock::now(),
            ..Record::default()
        };
        assert_eq!(owners.of(&me, None), OwnerState::Holds, "this process");
        let before_me = Record {
            established: crate::judge::Mono::from_nanos(1),
            ..me
        };
        assert_eq!(
            owners.of(&before_me, None),
            OwnerState::Exited,
            "started after its socket: a reused pid"
        );
        let gone = Record {
            owner_pid: u32::MAX - 1,
            ..me
        };
        assert_eq!(owners.of(&gone, None), OwnerState::Exited);
        let orphan = DiagSock {
            local: "198.51.100.2:40000".parse().unwrap(),
            peer: "203.0.113.7:6443".parse().unwrap(),
            state: 4,
            cookie: 7,
            inode: 0,
            uid: 0,
            send_q: 1,
            cgroup_id: None,
            info: None,
        };
        assert_eq!(owners.of(&me, Some(&orphan)), OwnerState::Nobody);
        let held = DiagSock { inode: 9, ..orphan };
        assert_eq!(owners.of(&me, Some(&held)), OwnerState::Holds);
    }
}
