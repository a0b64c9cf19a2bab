//! One agent per node: the agent holds a listening abstract Unix socket for its lifetime.
//! The kernel releases it when the process dies, however it dies, so no lock is ever stale.
//! Abstract names belong to the network namespace, which is the node for lifeline (it must
//! share the host's with kubelet), and agents in separate test namespaces stay apart.

use std::{
    io,
    os::{
        fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
        linux::net::SocketAddrExt as _,
        unix::net::{SocketAddr, UnixListener},
    },
};

use anyhow::{Context as _, Result, bail};

const NAME: &[u8] = b"lifeline/agent";

/// Held while the agent runs; dropping it (or dying) lets another agent start.
#[must_use = "the lock is released when this is dropped"]
pub struct AgentLock {
    _listener: UnixListener,
}

/// Takes the node's agent lock.
///
/// # Errors
/// When another agent holds it (the message names that agent) or the socket fails.
pub fn acquire() -> Result<AgentLock> {
    acquire_named(NAME)
}

fn acquire_named(name: &[u8]) -> Result<AgentLock> {
    let shown = String::from_utf8_lossy(name);
    let addr =
        SocketAddr::from_abstract_name(name).with_context(|| format!("bad lock name @{shown}"))?;
    match UnixListener::bind_addr(&addr) {
        Ok(l) => Ok(AgentLock { _listener: l }),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => bail!(
            "another lifeline agent is already running in this network namespace ({})",
            holder(name)
        ),
        Err(e) => Err(e).with_context(|| format!("cannot take the agent lock @{shown}")),
    }
}

/// `pid N, COMMAND LINE` of the lock's holder, or why it cannot be named.
fn holder(name: &[u8]) -> String {
    let pid = connect(&[&[0], name].concat()).and_then(|fd| peer_pid(&fd));
    match pid {
        // Another PID namespace's process shows as 0.
        Ok(0) => "its pid is not visible from here".to_owned(),
        Ok(pid) => {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let cmd: String = cmd.trim().chars().take(300).collect();
            format!("pid {pid}, {cmd}")
        }
        Err(e) => format!("it does not say which: {e}"),
    }
}

/// Connects to a Unix stream socket: a path, or an abstract name after a leading NUL.
/// Non-blocking, so a listener whose queue is full (nobody accepts: a hung process, or the
/// lock's listener after many refused agents) answers `EAGAIN` at once instead of hanging us.
pub(crate) fn connect(addr: &[u8]) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the result is checked before use.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: all-zero bytes are a valid `sockaddr_un`.
    let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    // A path keeps its terminating NUL from the zeroed tail.
    if addr.len() >= sa.sun_path.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    sa.sun_family = libc::sa_family_t::try_from(libc::AF_UNIX).unwrap_or_default();
    for (d, s) in sa.sun_path.iter_mut().zip(addr) {
        *d = libc::c_char::from_ne_bytes([*s]);
    }
    // An abstract name's length is exact; a path's includes its NUL.
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path)
        + addr.len()
        + usize::from(addr.first() != Some(&0));
    let len = libc::socklen_t::try_from(len).unwrap_or(libc::socklen_t::MAX);
    // SAFETY: `sa` is a valid `sockaddr_un` and `len` does not exceed its size.
    let r = unsafe { libc::connect(fd.as_raw_fd(), (&raw const sa).cast(), len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// The pid of the process that created the listening socket `fd` is connected to.
fn peer_pid(fd: &OwnedFd) -> io::Result<i32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = libc::socklen_t::try_from(size_of::<libc::ucred>()).unwrap_or(0);
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.pid)
}

#[cfg(test)]
mod tests {
    use super::acquire_named;

    /// A name of the test's own, so a real agent on the machine is neither seen nor disturbed.
    #[test]
    fn second_holder_is_refused_with_the_first_ones_pid() {
        let name = format!("lifeline-test/lock-{}", std::process::id());
        let first = acquire_named(name.as_bytes()).expect("the first takes the lock");
        let err = format!(
            "{:#}",
            acquire_named(name.as_bytes()).err().expect("refused")
        );
        let me = std::process::id();
        assert!(
            err.starts_with(
                "another lifeline agent is already running in this network namespace (pid "
            ) && err.contains(&format!("pid {me}, ")),
            "{err}"
        );
        drop(first);
        let again = acquire_named(name.as_bytes());
        assert!(again.is_ok(), "released on drop");
    }
}
