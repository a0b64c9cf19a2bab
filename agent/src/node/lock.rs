//! One agent per node: a POSIX record lock on `agent.net-INODE.lock` in a directory only root
//! can write (`$RUNTIME_DIRECTORY`, which systemd sets from `RuntimeDirectory=`, else
//! `/run/lifeline`). An abstract socket name, the lock before this one, can be bound first by
//! any local user; a file in a root-only directory cannot even be opened by one. INODE is the
//! network namespace's: the node for lifeline (it must share the host's with kubelet), while
//! agents in separate test namespaces stay apart. The kernel releases the lock when the process
//! dies, however it dies, and `F_GETLK` names the holder's pid, so no lock is ever stale or
//! anonymous. A record lock, not `flock`: only it says who holds it.

use std::{
    fs::File,
    io,
    os::{
        fd::AsRawFd as _,
        unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _},
    },
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, bail};

const DEFAULT_DIR: &str = "/run/lifeline";
/// A holder that exits between our two calls is retried, a few times only.
const TRIES: usize = 5;

/// Held while the agent runs; dropping it (or dying) lets another agent start.
#[must_use = "the lock is released when this is dropped"]
pub(crate) struct AgentLock {
    /// Its close releases the lock (and so would closing any other descriptor of the file
    /// in this process: only this module opens it).
    _file: File,
    path: PathBuf,
}

impl Drop for AgentLock {
    /// Removed while still held, so that a waiter holding the old file sees it is gone
    /// (`acquire_in` compares inodes) and nothing accumulates; closing the file releases it.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Takes the node's agent lock.
///
/// # Errors
/// When another agent holds it (the message names that agent), or the directory is not
/// root's alone.
pub(crate) fn acquire() -> Result<AgentLock> {
    let dir = std::env::var_os("RUNTIME_DIRECTORY")
        .and_then(|d| std::env::split_paths(&d).next())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
    let netns = std::fs::metadata("/proc/self/ns/net")
        .context("cannot read the network namespace (/proc/self/ns/net)")?
        .ino();
    acquire_in(&dir, &format!("agent.net-{netns}.lock"))
}

fn acquire_in(dir: &Path, name: &str) -> Result<AgentLock> {
    private_dir(dir)?;
    let path = dir.join(name);
    let shown = path.display();
    for _ in 0..TRIES {
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .with_context(|| format!("cannot open the agent lock {shown}"))?;
        match record_lock(&file, libc::F_SETLK) {
            Ok(_) => {
                // The previous holder may have removed the file we opened: take the new one.
                let now = std::fs::symlink_metadata(&path).map(|m| m.ino()).ok();
                if now == Some(file.metadata()?.ino()) {
                    return Ok(AgentLock { _file: file, path });
                }
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {
                match record_lock(&file, libc::F_GETLK)? {
                    // Released in between: try again.
                    None => {}
                    Some(pid) => bail!(
                        "another lifeline agent is already running in this network namespace ({})",
                        holder(pid)
                    ),
                }
            }
            Err(e) => return Err(e).with_context(|| format!("cannot lock {shown}")),
        }
    }
    bail!("the agent lock {shown} changed hands {TRIES} times while being taken")
}

/// Makes `dir` (mode 0700) when missing; refuses one another user could write in.
fn private_dir(dir: &Path) -> Result<()> {
    let shown = dir.display();
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot create {shown} for the agent lock"));
        }
    }
    let meta = std::fs::symlink_metadata(dir).with_context(|| format!("cannot inspect {shown}"))?;
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() {
        bail!("the agent lock's directory {shown} is not a directory: refusing it");
    }
    if meta.uid() != me {
        bail!(
            "the agent lock's directory {shown} belongs to uid {}, not uid {me}: refusing it (another user could take the lock)",
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        bail!(
            "the agent lock's directory {shown} is writable by group or others (mode {:04o}): refusing it (chmod 0700 it)",
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

/// `F_SETLK` (a write lock on the whole file) or `F_GETLK` (the pid of the holder that would
/// block one: `Some(0)` when it is in a PID namespace we cannot see into).
fn record_lock(file: &File, cmd: libc::c_int) -> io::Result<Option<i32>> {
    // SAFETY: all-zero bytes are a valid `flock`; start 0, length 0 is the whole file.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::c_short::try_from(libc::F_WRLCK).unwrap_or_default();
    fl.l_whence = libc::c_short::try_from(libc::SEEK_SET).unwrap_or_default();
    // SAFETY: `fl` is a valid `flock` for the kernel to read and (F_GETLK) write.
    if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &raw mut fl) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let unlocked = libc::c_short::try_from(libc::F_UNLCK).unwrap_or_default();
    Ok((cmd == libc::F_GETLK && fl.l_type != unlocked).then_some(fl.l_pid))
}

/// `pid N, COMMAND LINE` of the lock's holder, or why it cannot be named.
fn holder(pid: i32) -> String {
    if pid <= 0 {
        // Another PID namespace's process shows as 0.
        return "its pid is not visible from here".to_owned();
    }
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
    let cmd: String = cmd.trim().chars().take(300).collect();
    format!("pid {pid}, {cmd}")
}

#[cfg(test)]
mod tests;
