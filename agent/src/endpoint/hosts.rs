//! The hosts file, read as the node's clients read it. Kubelet is a Go program, and Go's
//! resolver (net/hosts.go) and glibc's `files` source agree on what matters here: `#` starts
//! a comment, the first field is an address and the rest are its names (the canonical name
//! and aliases alike), names match case-insensitively and without a trailing dot, and every
//! line naming the name adds its address (getaddrinfo's `files` backend and Go both return
//! all of them, not only the first line's). Search domains never apply to the hosts file:
//! they belong to the DNS source.

use std::{
    collections::BTreeSet,
    io::Read as _,
    net::IpAddr,
    path::{Path, PathBuf},
    time::Duration,
};

/// A hosts answer has no TTL. Go caches the hosts file for 5 s (net/hosts.go, `cacheMaxAge`)
/// and glibc reads it on every lookup, so kubelet sees an edit within 5 s: re-reading it as
/// often makes an edit move the set as fast as kubelet moves, for the cost of reading a
/// small local file.
pub(super) const HOSTS_REFRESH: Duration = Duration::from_secs(5);

/// Far above any real hosts file; a larger one is not read (uncertain evidence).
const MAX_BYTES: u64 = 4 << 20;

/// `name`'s addresses in the hosts file's text; empty when it is not there.
#[must_use]
pub(super) fn lookup(text: &str, name: &str) -> BTreeSet<IpAddr> {
    let want = normalise(name);
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.split_once('#').map_or(line, |(l, _)| l);
        let mut fields = line.split_whitespace();
        // An address with a zone (fe80::1%eth0) names a link, never an API server: skipped,
        // as is anything that is no address at all.
        let Some(Ok(ip)) = fields.next().map(str::parse::<IpAddr>) else {
            continue;
        };
        if fields.any(|n| normalise(n) == want) {
            out.insert(ip);
        }
    }
    out
}

fn normalise(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// Why the hosts file could not be read: the caller cannot tell whether the name is in it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot read the hosts file {}: {why}", path.display())]
pub(crate) struct HostsError {
    pub path: PathBuf,
    pub why: String,
}

/// The hosts file's text; a missing file is an empty one (glibc and Go both go on to the
/// next source then), any other failure is an error.
///
/// # Errors
/// When the file exists but cannot be read, or is too large to be a hosts file.
pub(super) fn read(path: &Path) -> Result<String, HostsError> {
    let err = |why: String| HostsError {
        path: path.to_owned(),
        why,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(err(e.to_string())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(e.to_string()))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(err(format!("larger than {MAX_BYTES} bytes")));
    }
    // Go reads bytes and glibc reads bytes: a stray non-UTF-8 comment must not hide a name.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# kubeadm on-prem: the control plane pinned here
127.0.0.1\tlocalhost
198.51.100.2   api.lab.test  k8s-api   # the first control-plane node
2001:db8::2 api.lab.test
203.0.113.7 other.lab.test API.LAB.TEST.
fe80::1%eth0 api.lab.test
not-an-address api.lab.test
#198.51.100.9 api.lab.test
198.51.100.10 # api.lab.test only in a comment
";

    fn ips(list: &[&str]) -> BTreeSet<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn every_line_naming_the_name_adds_its_address() {
        assert_eq!(
            lookup(FILE, "api.lab.test"),
            ips(&["198.51.100.2", "2001:db8::2", "203.0.113.7"])
        );
    }

    #[test]
    fn aliases_case_and_trailing_dots() {
        assert_eq!(lookup(FILE, "K8S-API"), ips(&["198.51.100.2"]));
        assert_eq!(
            lookup(FILE, "Api.Lab.Test."),
            lookup(FILE, "api.lab.test"),
            "case and the trailing dot do not matter"
        );
        assert_eq!(lookup(FILE, "localhost"), ips(&["127.0.0.1"]));
    }

    #[test]
    fn absent_names_and_comments_give_nothing() {
        assert!(lookup(FILE, "lab.test").is_empty(), "no suffix match");
        assert!(lookup(FILE, "api").is_empty(), "no search domains");
        assert!(lookup("", "api.lab.test").is_empty());
        assert!(lookup("# 198.51.100.2 x\n", "x").is_empty());
    }

    #[test]
    fn a_missing_file_is_empty_and_an_unreadable_one_an_error() {
        let missing = Path::new("/nonexistent/lifeline-hosts");
        assert_eq!(read(missing), Ok(String::new()));
        let e = read(Path::new("/")).unwrap_err();
        assert!(
            e.to_string().starts_with("cannot read the hosts file /: "),
            "{e}"
        );
    }
}
