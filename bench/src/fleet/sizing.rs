//! How many lifeline nodes this machine can hold. Every agent attaches its programs to the
//! cgroup v2 root, and the kernel allows at most 64 programs per attach type on one cgroup
//! (`BPF_CGROUP_MAX_PROGS`), whoever attached them: the 65th agent fails at `bpf_link_create`.
//! Agents of other labs running on the machine take slots too, so the free count is read
//! from the root before the fleet starts, and a few are left for them.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use lifeline_tests::cgroup2_mount;

/// The kernel's limit of programs per attach type on one cgroup.
pub(super) const KERNEL_MAX_PROGS: usize = 64;
/// Slots left for other labs (an agent of a concurrent test attaches one).
pub(super) const HEADROOM: usize = 4;

/// `sock_ops` programs attached to the cgroup v2 root now (`bpftool cgroup show`).
///
/// # Errors
/// When bpftool fails.
pub(super) fn attached_sock_ops() -> Result<usize> {
    let root = cgroup2_mount()?;
    let out = lifeline_tests::infra::cmd::run_args(&[
        "bpftool",
        "cgroup",
        "show",
        root.to_str().context("path")?,
    ])?;
    Ok(out
        .lines()
        .filter(|l| l.contains("cgroup_sock_ops"))
        .count())
}

/// The time of one loopback connect, accept and close inside namespace `ns`, in
/// microseconds (mean of `n`): what every `sock_ops` program attached at the root adds to.
///
/// # Errors
/// When the namespace cannot be joined or a socket fails.
pub(super) fn connect_us(ns: &str, count: u32) -> Result<f64> {
    let path = lifeline_tests::infra::cmd::netns_path(ns);
    let timing = std::thread::spawn(move || -> Result<f64> {
        let file = std::fs::File::open(&path)?;
        // SAFETY: a valid namespace fd; CLONE_NEWNET changes only this short-lived thread.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        ensure!(rc == 0, "setns: {}", std::io::Error::last_os_error());
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        let addr = listener.local_addr()?;
        let t0 = Instant::now();
        for _ in 0..count {
            let client = TcpStream::connect(addr)?;
            let (server, _) = listener.accept()?;
            drop((client, server));
        }
        Ok(t0.elapsed().as_secs_f64() * 1e6 / f64::from(count))
    });
    timing
        .join()
        .map_err(|_| anyhow::anyhow!("the connect timing thread panicked"))?
}
