//! The filter in a forked child (it cannot be taken off again): the calls that would
//! signal the parent are refused, the child's own go through; the same child without the
//! filter reaches the parent.

use super::*;

/// Exit codes of the child: 0, or the step that went wrong.
fn child(filtered: bool) -> i32 {
    // SAFETY: plain system calls after fork(2); `program` and `load` do not allocate.
    unsafe {
        let (me, parent) = (libc::getpid(), libc::getppid());
        let pid = u32::try_from(me).unwrap_or_default();
        if filtered && load(&program(pid)).is_err() {
            return 10;
        }
        let errno = || *libc::__errno_location();
        let refused = |rc: libc::c_long| rc == -1 && errno() == libc::EPERM;
        let zero = libc::c_long::from(0);
        let to_parent = libc::c_long::from(libc::kill(parent, 0));
        match (filtered, refused(to_parent), to_parent) {
            (true, true, _) | (false, false, 0) => {}
            _ => return 11,
        }
        if !filtered {
            return 0;
        }
        if libc::kill(me, 0) != 0 {
            return 12;
        }
        let p = libc::c_long::from(parent);
        if !refused(libc::syscall(libc::SYS_tgkill, p, p, zero)) {
            return 13;
        }
        let m = libc::c_long::from(me);
        let tid = libc::syscall(libc::SYS_gettid);
        if libc::syscall(libc::SYS_tgkill, m, tid, zero) != 0 {
            return 14;
        }
        if !refused(libc::syscall(libc::SYS_tkill, p, zero)) {
            return 15;
        }
        let none = std::ptr::null::<libc::siginfo_t>();
        let pidfd = libc::syscall(libc::SYS_pidfd_send_signal, -1, zero, none, zero);
        if !refused(pidfd) {
            return 16;
        }
        0
    }
}

fn run_child(filtered: bool) -> i32 {
    // SAFETY: the child makes only system calls and `_exit`s; the parent waits for it.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            libc::_exit(child(filtered));
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &raw mut status, 0), pid);
        assert!(libc::WIFEXITED(status), "status {status:#x}");
        libc::WEXITSTATUS(status)
    }
}

#[test]
fn the_agent_signals_only_itself() {
    assert_eq!(
        run_child(false),
        0,
        "without the filter the parent is reached"
    );
    assert_eq!(run_child(true), 0, "a step failed (the code names it)");
}

#[test]
fn the_program_jumps_stay_inside_it() {
    for (i, ins) in program(4242).iter().enumerate() {
        let is_jump = u32::from(ins.code) & 0x07 == libc::BPF_JMP;
        if is_jump {
            for off in [ins.jt, ins.jf] {
                assert!(i + 1 + usize::from(off) < LEN, "instruction {i}");
            }
        }
    }
    assert_eq!(program(4242)[11].k, 4242);
}
