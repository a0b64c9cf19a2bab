//! pod-syscalls: what a process in lifeline's pod may ask the kernel for, tried for real.
//! Built static (musl) by `tests/src/infra/pod_syscalls.rs` with plain `rustc` (std only, no
//! crates) and run inside the container with `podman exec`: the image is FROM scratch.
//!
//! Each line is `NAME ok`, `NAME errno N`, or `seccomp-filters count N`. Under lifeline's seccomp profile the escapes
//! must fail with EPERM (1) before the kernel looks at them; without the profile (same
//! capabilities) the kernel's own answer shows through: `unshare-user` and `clone-newuser`
//! succeed (a user namespace needs no privilege), `mount` on a missing path is ENOENT,
//! `ptrace` of a pid that cannot exist is ESRCH, `netlink-route` opens, `clone3` with no
//! arguments is EINVAL (ENOSYS from the profile: libc falls back to clone). The allowed
//! sockets (`inet6`, `unix`, `netlink-sock-diag`) open under both.
//!
//! Given a device name (`pod-syscalls DEVICE`, a dummy link the test made in the pod's host
//! network with a route on it), it also tries what `NET_ADMIN` would let the pod do to the
//! node's network through `ioctl`: delete that route (`SIOCDELRT`) and set the link's flags
//! (`SIOCSIFFLAGS`, down). Under the profile both fail with EPERM and the device is left as
//! it was; without it the kernel does both.
//!
//! Single-threaded on purpose: `unshare(CLONE_NEWUSER)` refuses a threaded caller.

use std::ffi::{c_char, c_int, c_long};

unsafe extern "C" {
    fn syscall(number: c_long, ...) -> c_long;
}

// x86_64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl).
const SYS_SOCKET: c_long = 41;
const SYS_CLONE: c_long = 56;
const SYS_WAIT4: c_long = 61;
const SYS_PTRACE: c_long = 101;
const SYS_MOUNT: c_long = 165;
const SYS_UNSHARE: c_long = 272;
const SYS_CLONE3: c_long = 435;
const SYS_EXIT_GROUP: c_long = 231;
const SYS_CLOSE: c_long = 3;
const SYS_IOCTL: c_long = 16;

// include/uapi/linux/sockios.h
const SIOCDELRT: c_long = 0x890C;
const SIOCSIFFLAGS: c_long = 0x8914;
const RTF_UP: u16 = 0x1;
const SOCK_DGRAM: c_long = 2;
const AF_INET: u16 = 2;

/// `struct ifreq` with the flags member of its union (x86_64: 16 + 24 bytes).
#[repr(C)]
struct IfreqFlags {
    name: [u8; 16],
    flags: i16,
    _pad: [u8; 22],
}

/// `struct sockaddr_in` as a `struct sockaddr`.
#[repr(C)]
#[derive(Clone, Copy)]
struct SockaddrIn {
    family: u16,
    port: u16,
    addr: [u8; 4],
    zero: [u8; 8],
}

/// `struct rtentry` (include/uapi/linux/route.h, x86_64 layout).
#[repr(C)]
struct Rtentry {
    pad1: u64,
    dst: SockaddrIn,
    gateway: SockaddrIn,
    genmask: SockaddrIn,
    flags: u16,
    pad2: i16,
    pad3: u64,
    pad4: *const u8,
    metric: i16,
    dev: *const u8,
    mtu: u64,
    window: u64,
    irtt: u16,
}

fn inet(addr: [u8; 4]) -> SockaddrIn {
    SockaddrIn {
        family: AF_INET,
        port: 0,
        addr,
        zero: [0; 8],
    }
}

/// SIOCDELRT of 203.0.113.0/24 on `dev`, then SIOCSIFFLAGS `dev` down: the node's routes and
/// links through `ioctl` on an `AF_INET` socket (a family the profile allows).
fn net_admin_ioctls(dev: &str) {
    let mut name = [0_u8; 16];
    let n = dev.len().min(15);
    name[..n].copy_from_slice(&dev.as_bytes()[..n]);
    // SAFETY: socket(2) with plain integers.
    let fd = unsafe { syscall(SYS_SOCKET, c_long::from(AF_INET), SOCK_DGRAM | SOCK_CLOEXEC, 0 as c_long) };
    if fd < 0 {
        report("siocdelrt", fd);
        report("siocsifflags", fd);
        return;
    }
    let route = Rtentry {
        pad1: 0,
        dst: inet([203, 0, 113, 0]),
        gateway: inet([0; 4]),
        genmask: inet([255, 255, 255, 0]),
        flags: RTF_UP,
        pad2: 0,
        pad3: 0,
        pad4: std::ptr::null(),
        metric: 0,
        dev: name.as_ptr(),
        mtu: 0,
        window: 0,
        irtt: 0,
    };
    // SAFETY: `route` and `ifr` are live, of the layouts the requests read.
    unsafe {
        report("siocdelrt", syscall(SYS_IOCTL, fd, SIOCDELRT, &raw const route));
        let ifr = IfreqFlags {
            name,
            flags: 0,
            _pad: [0; 22],
        };
        report("siocsifflags", syscall(SYS_IOCTL, fd, SIOCSIFFLAGS, &raw const ifr));
        syscall(SYS_CLOSE, fd);
    }
}

const CLONE_NEWUSER: c_long = 0x1000_0000;
const SIGCHLD: c_long = 17;
const PTRACE_ATTACH: c_long = 16;
const SOCK_STREAM: c_long = 1;
const SOCK_RAW: c_long = 3;
const SOCK_CLOEXEC: c_long = 0o2_000_000;

/// The result line of one call: its return value, or errno.
fn report(name: &str, rc: c_long) -> c_long {
    if rc < 0 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        println!("{name} errno {errno}");
    } else {
        println!("{name} ok");
    }
    rc
}

fn socket(name: &str, family: c_long, kind: c_long, protocol: c_long) {
    // SAFETY: socket(2) with plain integers.
    let fd = report(name, unsafe {
        syscall(SYS_SOCKET, family, kind | SOCK_CLOEXEC, protocol)
    });
    if fd >= 0 {
        // SAFETY: the descriptor just made.
        unsafe { syscall(SYS_CLOSE, fd) };
    }
}

fn main() {
    // First: after `unshare-user` below this process has no capability over the network.
    if let Some(dev) = std::env::args().nth(1) {
        net_admin_ioctls(&dev);
    }
    // SAFETY: each call passes integers and pointers to live NUL-terminated strings.
    unsafe {
        let source = c"none".as_ptr();
        let target = c"/nonexistent-lifeline-pod-syscalls".as_ptr();
        let fstype = c"tmpfs".as_ptr();
        report(
            "mount",
            syscall(
                SYS_MOUNT,
                source,
                target,
                fstype,
                0 as c_long,
                std::ptr::null::<c_char>(),
            ),
        );
        // pid_max is at most 2^22: this pid cannot exist.
        report(
            "ptrace",
            syscall(
                SYS_PTRACE,
                PTRACE_ATTACH,
                c_long::from(c_int::MAX),
                0 as c_long,
                0 as c_long,
            ),
        );
        // A fork-like clone into a new user namespace; the child leaves at once, silently.
        let flags = CLONE_NEWUSER | SIGCHLD;
        let child = syscall(
            SYS_CLONE,
            flags,
            0 as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
        );
        if child == 0 {
            syscall(SYS_EXIT_GROUP, 0 as c_long);
        }
        report("clone-newuser", child);
        if child > 0 {
            let status = std::ptr::null_mut::<c_int>();
            syscall(
                SYS_WAIT4,
                child,
                status,
                0 as c_long,
                std::ptr::null_mut::<u8>(),
            );
        }
        report(
            "clone3",
            syscall(SYS_CLONE3, std::ptr::null::<u8>(), 0 as c_long),
        );
        // Last: once in a new user namespace, this process's ids are unmapped there.
        report("unshare-user", syscall(SYS_UNSHARE, CLONE_NEWUSER));
    }
    // How many seccomp filters this process runs under (the profile's, as runc loads it):
    // lifeline adds one of its own to that.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(n) = status.lines().find_map(|l| l.strip_prefix("Seccomp_filters:")) {
        println!("seccomp-filters count {}", n.trim());
    }
    socket("netlink-route", 16, SOCK_RAW, 0);
    socket("netlink-sock-diag", 16, SOCK_RAW, 4);
    socket("inet6", 10, SOCK_STREAM, 0);
    socket("unix", 1, SOCK_STREAM, 0);
}
