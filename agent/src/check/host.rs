//! The rows of `lifeline check` about what this process is given: system calls (seccomp)
//! and the filesystems `run` mounts when missing. Both matter most in a pod, where the
//! runtime's seccomp profile and the missing `CAP_SYS_ADMIN` decide, not the kernel.

use std::path::Path;

use crate::{
    check::row::Row,
    kernel::errors,
    node::{
        mounts::{self, MountOutcome},
        seccomp,
    },
};

/// `bpf(2)` and `perf_event_open(2)` reach the kernel, or what refuses them.
pub(super) fn seccomp() -> Row {
    let filter = match seccomp::mode() {
        0 => "no seccomp filter",
        2 => "a seccomp filter",
        _ => "strict seccomp",
    };
    if errors::check_privileges().is_err() {
        return Row::warn(
            "seccomp",
            format!("{filter}; not probed without the capabilities"),
        );
    }
    match seccomp::diagnosis() {
        None => Row::pass(
            "seccomp",
            format!("{filter}; bpf(2) and perf_event_open(2) are allowed"),
        ),
        Some(why) => Row::fail("seccomp", why),
    }
}

/// What `run` will find or manage at `at`: `private` is the check's own mount namespace,
/// where the same `mount(2)` is tried; when that namespace could not be made, `mount(2)` fails
/// for `run` too unless the process has `CAP_SYS_ADMIN` (both need it).
pub(super) fn mount_row(
    name: &'static str,
    fstype: &str,
    at: &str,
    private: Result<&(), &std::io::Error>,
) -> Row {
    let path = Path::new(at);
    let outcome = match private {
        Ok(()) => mounts::try_ensure(fstype, path),
        Err(_) if mounts::is_mounted(path, fstype) => MountOutcome::Present,
        Err(_) if !errors::has_capability(errors::CAP_SYS_ADMIN) => {
            MountOutcome::Failed(std::io::Error::from_raw_os_error(libc::EPERM))
        }
        Err(e) => {
            return Row::warn(
                name,
                format!(
                    "not mounted at {at}; cannot tell whether `lifeline run` can mount it (no private mount namespace for a trial: {e})"
                ),
            );
        }
    };
    match outcome {
        MountOutcome::Present => Row::pass(name, format!("mounted at {at}")),
        MountOutcome::Mounted => Row::pass(
            name,
            format!("not mounted; `lifeline run` mounts it at {at} (a trial mount worked)"),
        ),
        MountOutcome::Failed(e) => {
            let why = if e.raw_os_error() == Some(libc::EPERM) {
                format!("{e}: mounting needs CAP_SYS_ADMIN")
            } else {
                e.to_string()
            };
            let cannot = format!("not mounted at {at}, and `lifeline run` cannot mount it ({why})");
            if fstype == "tracefs" {
                Row::warn(
                    name,
                    format!(
                        "{cannot}: the cgroup tracepoints cannot attach, target cgroups are re-checked every sweep instead; mount the host's tracefs there"
                    ),
                )
            } else {
                Row::pass(name, format!("{cannot}; not needed: lifeline pins nothing"))
            }
        }
    }
}
