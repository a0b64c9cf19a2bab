//! lifeline signals no process but itself, enforced by a seccomp filter of its own that
//! every command installs first, before any thread exists (so every thread inherits it).
//! With `hostPID` the pod sees every process of the node, and uid 0 may signal every
//! process of uid 0 (kubelet among them) without any capability; the pod's profile
//! (packaging/seccomp/lifeline.json) cannot name the agent's pid, which only exists at run
//! time, so it allows `tgkill` (the runtime's own threads need it before `execve`) and this
//! filter narrows it: `kill`, `tkill`, `tgkill`, `rt_sigqueueinfo` and `rt_tgsigqueueinfo`
//! only with the agent's own pid as their first argument (the kernel reads it as a 32-bit
//! `pid_t`, so only the low word is compared), `pidfd_send_signal` never (a pidfd names
//! any process), each refused with `EPERM`. On `x86_64` the x32 ABI (system call numbers
//! with bit 30 set, same audit arch) is refused whole: lifeline never uses it. Another
//! architecture's calls (none: the binary is native) pass to the filters already there.
//!
//! Filters only ever add restrictions, and one without `CAP_SYS_ADMIN` needs
//! `no_new_privs` (`seccomp(2)`, `SECCOMP_SET_MODE_FILTER`), which lifeline sets itself: it
//! executes no program, so the bit changes nothing else (the unit and the pod set it too).

use std::io;

/// `AUDIT_ARCH_*` of this build (include/uapi/linux/audit.h: the ELF machine, 64-bit,
/// little-endian: <https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/audit.h>).
#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xC000_00B7;
/// `__X32_SYSCALL_BIT` (arch/x86/include/uapi/asm/unistd.h).
const X32_BIT: u32 = 0x4000_0000;

/// `struct seccomp_data` offsets: nr, arch, then `args[0]` after the instruction pointer.
const NR: u32 = 0;
const AUDIT_ARCH: u32 = 4;
const ARG0_LOW: u32 = 16;

/// Calls whose first argument names the process (or thread) signalled.
const BY_PID: [libc::c_long; 5] = [
    libc::SYS_kill,
    libc::SYS_tkill,
    libc::SYS_tgkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_tgsigqueueinfo,
];

/// Instructions in the program (fixed: built without allocating, so a test can build it in
/// a forked child).
const LEN: usize = 14;
const ALLOW_AT: u8 = 12;
const REFUSE_AT: u8 = 13;
const CHECK_AT: u8 = 10;

/// The filter for process `pid`.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // small constants
fn program(pid: u32) -> [libc::sock_filter; LEN] {
    let ins = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let ld = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let jeq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let jge = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    // A jump's offsets count from the next instruction.
    let to = |from: u8, at: u8| at - from - 1;
    let x32 = if cfg!(target_arch = "x86_64") {
        X32_BIT
    } else {
        u32::MAX
    };
    let by_pid = |i: u8| ins(jeq, BY_PID[usize::from(i - 4)] as u32, to(i, CHECK_AT), 0);
    [
        ins(ld, AUDIT_ARCH, 0, 0),
        ins(jeq, ARCH, 0, to(1, ALLOW_AT)),
        ins(ld, NR, 0, 0),
        ins(jge, x32, to(3, REFUSE_AT), 0),
        by_pid(4),
        by_pid(5),
        by_pid(6),
        by_pid(7),
        by_pid(8),
        ins(
            jeq,
            libc::SYS_pidfd_send_signal as u32,
            to(9, REFUSE_AT),
            to(9, ALLOW_AT),
        ),
        ins(ld, ARG0_LOW, 0, 0),
        ins(jeq, pid, to(11, ALLOW_AT), to(11, REFUSE_AT)),
        ins(ret, libc::SECCOMP_RET_ALLOW, 0, 0),
        ins(ret, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32, 0, 0),
    ]
}

/// Installs the filter on the calling thread (and every thread it makes from now on), after
/// setting `no_new_privs`. Call it before any other thread exists.
///
/// # Errors
/// The kernel's refusal (no seccomp: `EINVAL`; a filter already there that refuses
/// `prctl`: `EPERM`).
pub(crate) fn install() -> io::Result<()> {
    let prog = program(std::process::id());
    load(&prog)
}

/// What `check`'s row and `run`'s log say of `install`'s result: Ok(what holds) or
/// Err(why not).
///
/// # Errors
/// When the filter is not installed, why.
pub(crate) fn describe(installed: &io::Result<()>) -> Result<String, String> {
    match installed {
        Ok(()) => Ok(
            "lifeline can signal no process but itself (a seccomp filter of its own)".to_owned(),
        ),
        Err(e) => Err(format!(
            "cannot install lifeline's own seccomp filter ({e}): nothing stops it from signalling the node's other processes of its uid"
        )),
    }
}

#[allow(clippy::cast_possible_truncation)] // LEN is 14
fn load(prog: &[libc::sock_filter; LEN]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: LEN as u16,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: prctl(2) with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fprog` points at `LEN` valid instructions that outlive the call (the kernel
    // copies them).
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &raw const fprog,
            0,
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
#[path = "signals_tests.rs"]
mod tests;
