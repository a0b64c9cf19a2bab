//! lab-pid-taker: a neighbour that gets a process's old pid (issue 34, test c). Started as
//! root with `PID PROGRAM ARGS...`, it clones a child with exactly that pid (`clone3`'s
//! `set_tid`, Linux 5.5, which needs `CAP_SYS_ADMIN`: the lab's root has it); the child becomes
//! uid/gid 65534 and execs PROGRAM (`argv[0]` its path, so its comm is the file's name). The
//! parent prints `took PID` only once the child's exec succeeded (the close-on-exec pipe reads
//! end of file: before, the test could read the pid's status while it was still this program's
//! fork, as one CI run did), or `cannot take PID: ERROR`, and waits for the child.

use std::ffi::CString;

#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(pid), Some(prog)) = (
        args.first().and_then(|p| p.parse::<i32>().ok()),
        args.get(1),
    ) else {
        eprintln!("usage: lab-pid-taker PID PROGRAM [ARGS...]");
        std::process::exit(2);
    };
    let child_argv: Vec<CString> = args[1..]
        .iter()
        .filter_map(|a| CString::new(a.as_bytes()).ok())
        .collect();
    let prog = CString::new(prog.as_bytes()).unwrap_or_default();
    let mut pipe = [-1; 2];
    // SAFETY: pipe2 fills our own two-int array.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        println!(
            "cannot take {pid}: pipe: {}",
            std::io::Error::last_os_error()
        );
        std::process::exit(1);
    }
    let tids = [pid];
    let clone = CloneArgs {
        exit_signal: u64::try_from(libc::SIGCHLD).unwrap_or_default(),
        set_tid: tids.as_ptr() as u64,
        set_tid_size: 1,
        ..CloneArgs::default()
    };
    // SAFETY: a fork-like clone3 (no CLONE_VM, no stack): the child gets a copy of this
    // single-threaded process and only calls async-signal-safe functions before execv.
    let got = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &raw const clone,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if got == 0 {
        let mut ptrs: Vec<*const libc::c_char> = child_argv.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        // SAFETY: plain syscalls on our own values; execv's arrays are NUL-terminated and
        // outlive the call.
        unsafe {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(65534, 65534, 65534) != 0
                || libc::setresuid(65534, 65534, 65534) != 0
            {
                libc::write(pipe[1], b"u".as_ptr().cast(), 1);
                libc::_exit(3);
            }
            libc::execv(prog.as_ptr(), ptrs.as_ptr());
            libc::write(pipe[1], b"x".as_ptr().cast(), 1);
            libc::_exit(4);
        }
    }
    if got < 0 {
        println!("cannot take {pid}: {}", std::io::Error::last_os_error());
        std::process::exit(1);
    }
    let mut byte = 0u8;
    // SAFETY: our own pipe ends and a one-byte buffer; the read returns 0 (end of file) once the
    // child's exec closed its copy of the write end, or 1 when the child reports a failure.
    let read = unsafe {
        libc::close(pipe[1]);
        libc::read(pipe[0], (&raw mut byte).cast(), 1)
    };
    if read != 0 {
        let why = if byte == b'u' { "setuid" } else { "exec" };
        println!("cannot take {pid}: the child's {why} failed");
        std::process::exit(1);
    }
    println!("took {got}");
    let mut status = 0;
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(i32::try_from(got).unwrap_or(-1), &raw mut status, 0) };
}
