//! The `setsockopt` hook: loaded with the namespace check where the kernel allows it
//! (`APP_KEEPALIVE_NETNS`), else without it (`APP_KEEPALIVE`), else not at all, which only
//! means an application's later keepalive calls win (one warning, and `check` says so).

use std::os::fd::BorrowedFd;

use anyhow::Result;
use aya::{Ebpf, programs::CgroupSockopt};
use lifeline_common::hooks::Hook;

use super::attach::{ATTACH_MODE, program};
use crate::kernel::errors::explain_program;

/// Which variant of the hook runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AppKeepaliveHook {
    /// Watched sockets of the agent's namespace only.
    Merged,
    /// Matched by addresses and ports alone (no namespace cookie in this hook before 5.15).
    MergedAnyNetns,
    /// The hook could not load: why.
    Unavailable(String),
}

fn attach(ebpf: &mut Ebpf, hook: Hook, cgroup: BorrowedFd<'_>) -> Result<()> {
    let prog: &mut CgroupSockopt = program(ebpf, hook)?;
    prog.load().map_err(|e| explain_program(hook, &e))?;
    prog.attach(cgroup, ATTACH_MODE)
        .map_err(|e| explain_program(hook, &e))?;
    Ok(())
}

pub(super) fn load(ebpf: &mut Ebpf, cgroup: BorrowedFd<'_>) -> AppKeepaliveHook {
    let Err(first) = attach(ebpf, Hook::Setsockopt, cgroup) else {
        return AppKeepaliveHook::Merged;
    };
    tracing::debug!(error = %format!("{first:#}"), "setsockopt hook with the namespace check did not load (needs Linux {}.{}); trying without", Hook::Setsockopt.since().0, Hook::Setsockopt.since().1);
    match attach(ebpf, Hook::SetsockoptAnyNetns, cgroup) {
        Ok(()) => AppKeepaliveHook::MergedAnyNetns,
        Err(e) => {
            let why = format!("{e:#}");
            tracing::warn!(error = %why, "setsockopt hook unavailable (needs Linux {}.{}): an application that sets its own keepalive after connecting loosens lifeline's", Hook::SetsockoptAnyNetns.since().0, Hook::SetsockoptAnyNetns.since().1);
            AppKeepaliveHook::Unavailable(why)
        }
    }
}
