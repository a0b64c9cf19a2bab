//! Which network namespace is ours, in the probe's terms. The hooks run on the cgroup root,
//! for every namespace of the host; only sockets of the agent's own namespace may be
//! recorded (`sock_diag`, which reads and kills them, works per namespace, and parallel
//! agents in other namespaces must not see each other's sockets). `SO_NETNS_COOKIE` would
//! tell the cookie directly, but only from 5.14; so the agent connects a socket of its own
//! whose cookie it has written into `CONFIG`, and the connect hook, which has
//! `bpf_get_netns_cookie` since 5.7, writes the namespace's cookie and refuses that
//! connect: no packet leaves.

use std::{net::SocketAddrV4, os::fd::AsRawFd as _};

use anyhow::{Result, bail};

use crate::kernel::{probe::Probe, sockopts::socket_cookie};

/// Teach the probe the agent's namespace; returns its cookie.
///
/// # Errors
/// When the calibration connect is not seen by the hook.
pub(crate) fn calibrate(probe: &mut Probe, port: u16) -> Result<u64> {
    let sock = crate::kernel::sockopts::tcp_socket()?;
    let cookie = socket_cookie(&sock)?;
    probe.begin_calibration(cookie)?;
    let addr = SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port);
    let sa = libc::sockaddr_in {
        sin_family: libc::sa_family_t::try_from(libc::AF_INET).unwrap_or_default(),
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: a valid socket and a valid sockaddr_in of the given length.
    let rc = unsafe {
        libc::connect(
            sock.as_raw_fd(),
            (&raw const sa).cast(),
            libc::socklen_t::try_from(size_of::<libc::sockaddr_in>()).unwrap_or_default(),
        )
    };
    let err = std::io::Error::last_os_error();
    let netns = probe.end_calibration()?;
    if rc == 0 || err.raw_os_error() != Some(libc::EPERM) || netns == 0 {
        bail!(
            "the probe's connect hook did not see the agent's calibration connect (connect: {}); cannot tell this network namespace's sockets from others'",
            if rc == 0 {
                "succeeded".to_owned()
            } else {
                err.to_string()
            }
        );
    }
    Ok(netns)
}
