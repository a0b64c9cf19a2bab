//! A proxy's configuration files, read as the proxy sees them and never more than a bound:
//! every path is resolved inside the proxy's own root (`open.rs`: `openat2` with
//! `RESOLVE_IN_ROOT`), only regular files are read (a FIFO or a device at the path would
//! block or never end), each file and the whole read have a byte bound, and so has the count
//! of files (an `include` loop or a huge glob stops there). Whoever can write the proxy's
//! files chooses their text, so each bound is an error naming itself, never a panic, a hang
//! or memory the agent does not have (its unit's `MemoryMax=128M`).

use std::{
    fmt,
    os::fd::OwnedFd,
    path::{Path, PathBuf},
};

use super::open;

/// At most this many files per configuration read.
pub(super) const MAX_FILES: usize = 64;
/// At most this many bytes in one file (kubespray's nginx.conf is 2 KiB, Debian's whole
/// /etc/nginx about 10 KiB).
pub(super) const MAX_FILE_BYTES: u64 = 1 << 20;
/// And in all the files of one read together.
pub(super) const MAX_TOTAL_BYTES: u64 = 2 << 20;

/// Why a configuration could not be read; one line each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum ReadError {
    /// No such file inside the proxy's root (a symlink leading out of it ends here too).
    Missing {
        path: PathBuf,
    },
    /// Opening failed (missing, not allowed, a symlink leading nowhere inside the root).
    Open {
        path: PathBuf,
        error: String,
    },
    /// Not a regular file (a FIFO, socket, device or directory).
    NotRegular {
        path: PathBuf,
        kind: &'static str,
    },
    TooBig {
        path: PathBuf,
        bytes: u64,
    },
    TooMuch {
        bytes: u64,
    },
    TooManyFiles,
    /// The parser's own bounds (nesting, directives).
    Parse {
        path: PathBuf,
        why: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { path } => {
                write!(f, "{} does not exist in the proxy's root", path.display())
            }
            Self::Open { path, error } => write!(f, "cannot open {}: {error}", path.display()),
            Self::NotRegular { path, kind } => write!(
                f,
                "{} is a {kind}, not a regular file: not read",
                path.display()
            ),
            Self::TooBig { path, bytes } => write!(
                f,
                "{} has {bytes} bytes, more than the {MAX_FILE_BYTES} read of one file: not read",
                path.display()
            ),
            Self::TooMuch { bytes } => write!(
                f,
                "the configuration's files hold more than {MAX_TOTAL_BYTES} bytes together ({bytes} so far): not read"
            ),
            Self::TooManyFiles => write!(
                f,
                "the configuration names more than {MAX_FILES} files: not read"
            ),
            Self::Parse { path, why } => write!(f, "{}: {why}", path.display()),
        }
    }
}

/// The root the proxy's paths are resolved in: `/proc/PID/root` (its mount namespace's
/// root: a static pod's `/etc/nginx`) when the kernel lets us open it, which needs ptrace
/// access to the proxy; else our own root, which is the proxy's for a host service, and
/// where kubespray's static pod mounts its configuration from (hostPath `/etc/nginx`).
pub(super) struct Root {
    fd: OwnedFd,
}

impl Root {
    /// The root of process `pid`, or ours when that cannot be opened.
    ///
    /// # Errors
    /// When neither can be opened.
    pub(super) fn of(pid: u32) -> std::io::Result<Self> {
        let theirs = PathBuf::from(format!("/proc/{pid}/root"));
        match open::dir(&theirs) {
            Ok(fd) => Ok(Self { fd }),
            Err(_) => Self::at(Path::new("/")),
        }
    }

    /// The directory `dir` as a root (tests; our own `/`).
    ///
    /// # Errors
    /// When it cannot be opened.
    pub(super) fn at(dir: &Path) -> std::io::Result<Self> {
        Ok(Self {
            fd: open::dir(dir)?,
        })
    }
}

pub(super) struct Files<'r> {
    root: &'r Root,
    /// Where a relative path starts (nginx: the main file's directory).
    base: PathBuf,
    read: Vec<PathBuf>,
    bytes: u64,
}

impl<'r> Files<'r> {
    #[must_use]
    pub(super) fn new(root: &'r Root, base: &Path) -> Self {
        Self {
            root,
            base: base.to_owned(),
            read: Vec::new(),
            bytes: 0,
        }
    }

    /// `path` as the proxy names it, made absolute against the base.
    fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.base.join(path)
        }
    }

    /// The text of `path` (as the proxy names it), within the bounds.
    ///
    /// # Errors
    /// As `ReadError` says.
    pub(super) fn read(&mut self, path: &Path) -> Result<String, ReadError> {
        if self.read.len() >= MAX_FILES {
            return Err(ReadError::TooManyFiles);
        }
        let abs = self.absolute(path);
        let left = MAX_TOTAL_BYTES.saturating_sub(self.bytes);
        let text = open::read_regular(&self.root.fd, &abs, MAX_FILE_BYTES, left)
            .map_err(|e| e.at(&abs))?;
        self.bytes += text.len() as u64;
        self.read.push(abs);
        Ok(text)
    }

    /// Every file `pattern` names (a `*` in its last component only, as kubespray and
    /// Debian's configurations use it), sorted as nginx's glob returns them. A pattern
    /// without `*` is one file, which must be readable; a glob's directory that does not
    /// exist names none (as nginx's `ngx_open_glob`).
    ///
    /// # Errors
    /// When a file it names cannot be read within the bounds.
    pub(super) fn glob(&mut self, pattern: &str) -> Result<Vec<(PathBuf, String)>, ReadError> {
        let p = Path::new(pattern);
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let Some((pre, post)) = name.split_once('*') else {
            let text = self.read(p)?;
            return Ok(vec![(p.to_owned(), text)]);
        };
        let dir = self.absolute(p.parent().unwrap_or(Path::new("")));
        let Ok(mut names) = open::list_dir(&self.root.fd, &dir, MAX_FILES * 16) else {
            return Ok(Vec::new());
        };
        names.retain(|n| {
            n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post)
        });
        names.sort();
        let mut out = Vec::new();
        for n in names {
            let path = dir.join(n);
            let text = self.read(&path)?;
            out.push((path, text));
        }
        Ok(out)
    }

    /// Whether `path` names a directory inside the root (haproxy's `-f DIR`).
    #[must_use]
    pub(super) fn is_dir(&self, path: &Path) -> bool {
        open::is_dir(&self.root.fd, &self.absolute(path))
    }

    /// The files read so far, as the proxy names them.
    #[must_use]
    pub(super) fn read_list(&self) -> Vec<PathBuf> {
        self.read.clone()
    }
}

/// `HOST:PORT` (`[V6]:PORT` too) as a proxy's server line writes it; `unix:` and a missing
/// port are not an API server on TCP.
#[must_use]
pub(super) fn split_host_port(s: &str) -> Option<(String, u16)> {
    if s.starts_with("unix:") {
        return None;
    }
    let (host, port) = s.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return None;
    }
    Some((host.to_owned(), port.parse().ok()?))
}

impl open::Failure {
    /// The failure, with the path it was about.
    #[must_use]
    pub(super) fn at(self, path: &Path) -> ReadError {
        let path = path.to_owned();
        match self {
            Self::Open(e) if e.kind() == std::io::ErrorKind::NotFound => {
                ReadError::Missing { path }
            }
            Self::Open(e) => ReadError::Open {
                path,
                error: e.to_string(),
            },
            Self::NotRegular(kind) => ReadError::NotRegular { path, kind },
            Self::TooBig(bytes) => ReadError::TooBig { path, bytes },
            Self::TooMuch(bytes) => ReadError::TooMuch { bytes },
        }
    }
}
