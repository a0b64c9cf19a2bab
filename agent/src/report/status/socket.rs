//! The status socket's path: lifeline replaces only its own leftovers there. A socket that
//! refuses connections was left by an agent that could not clean up (SIGKILL) and is
//! replaced; a socket that accepts is someone's live one; anything else is not a socket of
//! ours at all, and is left intact.

use std::{
    fs::FileType,
    io,
    os::unix::{ffi::OsStrExt as _, fs::FileTypeExt as _},
    path::Path,
};

use anyhow::{Context as _, Result, bail};

/// Whether the path can be bound, checked before anything is attached.
///
/// # Errors
/// One line naming the path and what is there, when it is not free or stale.
pub(crate) fn prepare(path: &Path) -> Result<()> {
    state(path).map(drop)
}

/// Makes the path free for `bind` (logging the removal of a stale socket).
///
/// # Errors
/// As `prepare`, or when the stale socket cannot be removed.
pub(crate) fn clear(path: &Path) -> Result<()> {
    if state(path)? == PathState::Stale {
        std::fs::remove_file(path)
            .with_context(|| format!("cannot remove the stale status socket {}", path.display()))?;
        tracing::info!(
            path = %path.display(),
            "removed a stale status socket at {} (left by an agent that did not stop cleanly)",
            path.display()
        );
    }
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum PathState {
    Free,
    /// A socket nobody listens on.
    Stale,
}

fn state(path: &Path) -> Result<PathState> {
    let shown = path.display();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(PathState::Free),
        Err(e) => {
            return Err(e).with_context(|| format!("--status-socket {shown}: cannot inspect it"));
        }
    };
    let kind = meta.file_type();
    if !kind.is_socket() {
        bail!(
            "--status-socket {shown} is {}, not a socket: refusing to replace it (remove it or choose another path)",
            describe(path, kind)
        );
    }
    match crate::node::unix::connect(path.as_os_str().as_bytes()) {
        Ok(_) => bail!(
            "--status-socket {shown} is in use: another process serves on it (another lifeline agent, in another network namespace?)"
        ),
        Err(e) => match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => Ok(PathState::Stale),
            Some(libc::ENOENT) => Ok(PathState::Free),
            Some(libc::EAGAIN) => bail!(
                "--status-socket {shown} is in use: another process listens on it (and does not keep up)"
            ),
            _ => Err(e).with_context(|| {
                format!("--status-socket {shown}: cannot tell whether it is in use")
            }),
        },
    }
}

fn describe(path: &Path, kind: FileType) -> String {
    if kind.is_symlink() {
        let to = std::fs::read_link(path)
            .map_or_else(|e| format!("? ({e})"), |t| t.display().to_string());
        return format!("a symbolic link to {to}");
    }
    let what = if kind.is_file() {
        "a regular file"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "something else"
    };
    what.to_owned()
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    #[test]
    fn only_a_stale_socket_is_replaced() {
        let dir =
            std::env::temp_dir().join(format!("lifeline-status-socket-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("s.sock");
        assert_eq!(state(&sock).unwrap(), PathState::Free);

        let live = UnixListener::bind(&sock).unwrap();
        let err = format!("{:#}", prepare(&sock).unwrap_err());
        assert!(err.contains("is in use"), "{err}");
        drop(live); // a socket file nobody listens on any more: what SIGKILL leaves
        assert_eq!(state(&sock).unwrap(), PathState::Stale);
        clear(&sock).unwrap();
        assert!(!sock.exists());

        let file = dir.join("f");
        std::fs::write(&file, "keep me").unwrap();
        let link = dir.join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        for (path, what) in [
            (&file, "a regular file"),
            (&dir, "a directory"),
            (&link, "a symbolic link to "),
        ] {
            let err = format!("{:#}", clear(path).unwrap_err());
            assert!(
                err.contains(what) && err.contains(&path.display().to_string()),
                "{err}"
            );
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
