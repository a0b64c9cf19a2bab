//! A proxy's configuration files, read as the proxy sees them: through `/proc/PID/root/`
//! (a static pod's `/etc/nginx` is in its container's mount namespace), with a bound on
//! how many are read (an `include` loop or a huge glob stops there).

use std::path::{Path, PathBuf};

/// At most this many files per configuration.
const MAX_FILES: usize = 64;
/// And at most this many bytes each.
const MAX_BYTES: u64 = 1 << 20;

pub struct Files {
    root: PathBuf,
    /// Where a relative path starts (nginx: the main file's directory).
    base: PathBuf,
    read: Vec<PathBuf>,
}

impl Files {
    #[must_use]
    pub fn new(root: &Path, base: &Path) -> Self {
        Self {
            root: root.to_owned(),
            base: base.to_owned(),
            read: Vec::new(),
        }
    }

    /// `path` as the proxy names it (absolute, or relative to the base).
    fn inside(&self, path: &Path) -> PathBuf {
        let abs = if path.is_absolute() {
            path.to_owned()
        } else {
            self.base.join(path)
        };
        self.root.join(abs.strip_prefix("/").unwrap_or(&abs))
    }

    /// The text of `path` (as the proxy names it), if readable and within the bounds.
    pub fn read(&mut self, path: &Path) -> Option<String> {
        use std::io::Read;
        if self.read.len() >= MAX_FILES {
            return None;
        }
        let f = std::fs::File::open(self.inside(path)).ok()?;
        let mut text = String::new();
        f.take(MAX_BYTES).read_to_string(&mut text).ok()?;
        self.read.push(if path.is_absolute() {
            path.to_owned()
        } else {
            self.base.join(path)
        });
        Some(text)
    }

    /// Every file `pattern` names (a `*` in its last component only, as kubespray and
    /// Debian's configurations use it), sorted as nginx's glob returns them.
    pub fn glob(&mut self, pattern: &str) -> Vec<(PathBuf, String)> {
        let p = Path::new(pattern);
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let paths: Vec<PathBuf> = match name.split_once('*') {
            None => vec![p.to_owned()],
            Some((pre, post)) => {
                let dir = p.parent().unwrap_or(Path::new(""));
                let mut names: Vec<String> = std::fs::read_dir(self.inside(dir))
                    .map(|rd| {
                        rd.filter_map(Result::ok)
                            .filter_map(|e| e.file_name().into_string().ok())
                            .filter(|n| {
                                n.len() >= pre.len() + post.len()
                                    && n.starts_with(pre)
                                    && n.ends_with(post)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                names.sort();
                names.into_iter().map(|n| dir.join(n)).collect()
            }
        };
        paths
            .into_iter()
            .filter_map(|path| self.read(&path).map(|t| (path, t)))
            .collect()
    }

    /// The files read so far, as the proxy names them.
    #[must_use]
    pub fn read_list(&self) -> Vec<PathBuf> {
        self.read.clone()
    }
}

/// `HOST:PORT` (`[V6]:PORT` too) as a proxy's server line writes it; `unix:` and a missing
/// port are not an API server on TCP.
#[must_use]
pub fn split_host_port(s: &str) -> Option<(String, u16)> {
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
