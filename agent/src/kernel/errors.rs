//! Turning kernel and loader failures into one line an operator can act on.

use std::io;

use anyhow::anyhow;
use aya::{EbpfError, programs::ProgramError};
use lifeline_common::hooks::Hook;

const PRIVILEGES: &str = "lifeline needs root, or CAP_BPF + CAP_PERFMON + CAP_NET_ADMIN";

fn io_hint(e: &io::Error) -> Option<String> {
    match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => Some(permission_hint()),
        // E2BIG from an attach is not an old kernel: a cgroup holds at most 64 programs per
        // attach type (BPF_CGROUP_MAX_PROGS), and other agents may have taken them; from a
        // load, it is a program too large for an old verifier.
        Some(libc::E2BIG) => Some(
            "the kernel refused it as too big: the cgroup already holds the kernel's maximum of 64 programs of this attach type (other eBPF agents, or lifeline instances in other network namespaces), or the program is too large for this kernel's verifier".to_owned(),
        ),
        Some(libc::EINVAL | libc::ENOTSUP) => Some(
            "the kernel does not support this program type or attach point (see docs/ARCHITECTURE.md for minimum versions)".to_owned(),
        ),
        _ => None,
    }
}

/// `EPERM` names the missing capabilities, or, when they are all there, what else refuses
/// (a seccomp filter, in a container): never "needs root" to a process that has what it needs.
fn permission_hint() -> String {
    match check_privileges() {
        Err(e) => format!("{e:#}"),
        Ok(()) => crate::node::seccomp::diagnosis().unwrap_or_else(|| {
            format!("refused although the capabilities are present; {PRIVILEGES}")
        }),
    }
}

fn find_io<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a io::Error> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            return Some(io);
        }
        cur = err.source();
    }
    None
}

/// Explain a failure to load the eBPF object.
pub(crate) fn explain_load(e: &EbpfError) -> anyhow::Error {
    let hint = find_io(e).and_then(io_hint);
    match hint {
        Some(h) => anyhow!("cannot load the eBPF probe: {e}: {h}"),
        None => anyhow!("cannot load the eBPF probe: {e}"),
    }
}

/// Explain a failure to load or attach one program (named as the object names it).
pub(crate) fn explain_program(hook: Hook, e: &ProgramError) -> anyhow::Error {
    let name = hook.program();
    // A verifier rejection also comes back as EACCES: that is not a privilege problem.
    let hint = if matches!(e, ProgramError::LoadError { .. }) {
        Some(
            "the kernel's verifier rejected it (see docs/ARCHITECTURE.md for minimum kernel versions)"
                .to_owned(),
        )
    } else {
        find_io(e).and_then(io_hint)
    };
    let detail = match e {
        ProgramError::LoadError {
            io_error,
            verifier_log,
        } => {
            let log = verifier_log.to_string();
            if std::env::var_os("LIFELINE_VERIFIER_LOG").is_some() {
                eprintln!("{log}");
            }
            // The reason is the last line before the statistics the verifier appends.
            let stats = ["processed ", "verification time", "stack depth"];
            let reason = log
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty() && !stats.iter().any(|s| l.starts_with(s)));
            format!(
                "{io_error} (verifier: {}; set LIFELINE_VERIFIER_LOG=1 for its whole log)",
                reason.unwrap_or("no reason given")
            )
        }
        other => other.to_string(),
    };
    match hint {
        Some(h) => anyhow!("cannot load or attach {name}: {detail}: {h}"),
        None => anyhow!("cannot load or attach {name}: {detail}"),
    }
}

/// Whether this process has capability `cap` in its effective set.
pub(crate) fn has_capability(cap: u32) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|eff| eff & (1u64 << cap) != 0)
}

pub(crate) const CAP_SYS_ADMIN: u32 = 21;

/// Capabilities `lifeline run` needs, checked up front so that the message names
/// them instead of whichever syscall happens to fail first.
pub(crate) fn check_privileges() -> anyhow::Result<()> {
    const CAP_NET_ADMIN: u32 = 12;
    const CAP_PERFMON: u32 = 38;
    const CAP_BPF: u32 = 39;
    let has = has_capability;
    let bpf_ok = has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON));
    if bpf_ok && has(CAP_NET_ADMIN) {
        return Ok(());
    }
    let missing: Vec<&str> = [
        (!bpf_ok && !has(CAP_BPF)).then_some("CAP_BPF"),
        (!bpf_ok && !has(CAP_PERFMON)).then_some("CAP_PERFMON"),
        (!has(CAP_NET_ADMIN)).then_some("CAP_NET_ADMIN"),
    ]
    .into_iter()
    .flatten()
    .collect();
    Err(anyhow!(
        "missing privileges: this process lacks {}; {PRIVILEGES}",
        missing.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_full_cgroup_is_not_called_an_old_kernel() {
        let full = super::io_hint(&std::io::Error::from_raw_os_error(libc::E2BIG));
        assert!(full.is_some_and(|h| h.contains("maximum of 64 programs")));
        let old = super::io_hint(&std::io::Error::from_raw_os_error(libc::EINVAL));
        assert!(old.is_some_and(|h| h.contains("does not support")));
    }
}
