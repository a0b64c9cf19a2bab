//! The lab's unprivileged neighbour: the helper binaries that play a local user (the lock
//! squatter, the crowd at the servers, the connect flood) become uid/gid 65534 with no
//! supplementary groups before they do anything, and say so on their first line of output
//! (`uid U pid P`), which the tests read to prove they ran unprivileged.

/// `nobody` on Debian.
pub const NOBODY: libc::uid_t = 65534;

/// Drops to uid/gid 65534 and prints `uid U pid P`.
///
/// # Errors
/// When a step is refused (the helper was not started as root); the text names the uid and
/// the kernel's error.
pub fn become_nobody() -> Result<(), String> {
    // SAFETY: plain syscalls on values of our own; each result is checked.
    let dropped = unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setresgid(NOBODY, NOBODY, NOBODY) == 0
            && libc::setresuid(NOBODY, NOBODY, NOBODY) == 0
    };
    if !dropped {
        return Err(format!(
            "cannot become uid {NOBODY}: {}",
            std::io::Error::last_os_error()
        ));
    }
    println!(
        "uid {} pid {}",
        // SAFETY: getuid(2) cannot fail.
        unsafe { libc::getuid() },
        std::process::id()
    );
    Ok(())
}
