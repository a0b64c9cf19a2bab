//! Telling a seccomp denial from a missing capability. Both end in `EPERM`: the container
//! runtimes' default profiles (containers-common's, containerd's, moby's) allow `bpf(2)` and
//! `perf_event_open(2)` only to a container that has `CAP_SYS_ADMIN`, so a pod given exactly
//! `CAP_BPF` + `CAP_PERFMON` + `CAP_NET_ADMIN` fails its first map creation with `EPERM`, the
//! same errno a missing `CAP_BPF` gives. Each call is made here with arguments the kernel
//! rejects before any capability check (`EINVAL`, `EFAULT`): `EPERM` then can only come from a
//! filter (or an LSM) standing in front of the system call.

/// The profile this repository ships for a pod (a `Localhost` seccomp profile).
pub(crate) const PROFILE: &str = "packaging/seccomp/lifeline.json";

/// `Seccomp:` of /proc/self/status: 0 none, 1 strict, 2 filter.
#[must_use]
pub(crate) fn mode() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Seccomp:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The system calls lifeline needs that something in front of the kernel refuses.
#[must_use]
pub(crate) fn denied() -> Vec<&'static str> {
    let errno = |rc: libc::c_long| {
        (rc == -1)
            .then(|| std::io::Error::last_os_error().raw_os_error())
            .flatten()
    };
    // SAFETY: an unknown bpf command with a null, zero-sized attribute: the kernel returns
    // EINVAL without reading anything.
    let bpf = errno(unsafe { libc::syscall(libc::SYS_bpf, i32::MAX, 0usize, 0u32) });
    // SAFETY: a null attribute pointer: the kernel's first step, copying it, fails with
    // EFAULT; nothing is opened.
    let perf = errno(unsafe {
        libc::syscall(libc::SYS_perf_event_open, 0usize, 0i32, -1i32, -1i32, 0u64)
    });
    [("bpf(2)", bpf), ("perf_event_open(2)", perf)]
        .into_iter()
        .filter(|(_, e)| matches!(e, Some(libc::EPERM | libc::EACCES)))
        .map(|(name, _)| name)
        .collect()
}

/// Why a call failed with `EPERM` although the capabilities are present, when that can be
/// told: a seccomp filter (or, without one, an LSM) refusing the system calls themselves.
#[must_use]
pub(crate) fn diagnosis() -> Option<String> {
    let denied = denied();
    if denied.is_empty() {
        return None;
    }
    let calls = denied.join(" and ");
    Some(if mode() == 2 {
        format!(
            "this process's seccomp filter denies {calls} although CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN are present (a container runtime's default profile allows them only with CAP_SYS_ADMIN): run it with the seccomp profile {PROFILE} (README, \"Run on a fleet\")"
        )
    } else {
        format!(
            "{calls} fail with EPERM although CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN are present and no seccomp filter is set: an LSM (SELinux, AppArmor, lockdown) refuses them"
        )
    })
}
