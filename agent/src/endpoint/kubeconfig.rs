//! The API server endpoint from kubelet's kubeconfig: the cluster's `server:` URL.
//!
//! Only that one key matters, so a line scan is enough (no YAML parser): the first
//! `server: https://HOST[:PORT]` under `clusters`, HOST possibly a bracketed IPv6 literal.

use std::{io::Read as _, os::unix::fs::OpenOptionsExt as _, path::Path};

use anyhow::{Context as _, Result, anyhow, bail};

/// Far above any real kubeconfig (embedded certificates make them a few KiB).
const MAX_BYTES: u64 = 1 << 20;

/// `(host, port)` of the first cluster's server.
///
/// # Errors
/// When the file cannot be read, is not a text file, or has no usable `server:` URL.
pub(crate) fn server(path: &Path) -> Result<(String, u16)> {
    let text = read(path).with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
    let url = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("server:"))
        .map(|v| v.trim().trim_matches(|c| c == '"' || c == '\''))
        .next()
        .ok_or_else(|| anyhow!("kubeconfig {} has no cluster `server:` URL", path.display()))?;
    parse_url(url).with_context(|| format!("kubeconfig {}: bad server URL {url:?}", path.display()))
}

/// The file's text. The path may come from another process's command line, so it is opened
/// without blocking (a FIFO must not hang the agent) and must be a regular, small text file.
fn read(path: &Path) -> Result<String> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        bail!("not a regular file");
    }
    let mut bytes = Vec::new();
    (&mut file).take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_BYTES {
        bail!("larger than {MAX_BYTES} bytes: not a kubeconfig");
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "not a text file (invalid UTF-8 at byte {}): not a kubeconfig",
            e.utf8_error().valid_up_to()
        )
    })
}

fn parse_url(url: &str) -> Result<(String, u16)> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| anyhow!("no scheme"))?;
    let default_port = match scheme {
        "https" => 443,
        "http" => 80,
        other => bail!("unsupported scheme {other:?}"),
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| anyhow!("unclosed '['"))?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        bail!("no host");
    }
    let port = port.map_or(Ok(default_port), |p| {
        p.parse::<u16>().map_err(|_| anyhow!("bad port {p:?}"))
    })?;
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::{parse_url, server};

    /// One line for each way a file can be unusable, naming the file and the problem.
    #[test]
    fn unusable_files_give_one_clear_line() {
        let dir = std::env::temp_dir().join(format!("lifeline-kubeconfig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases: [(&str, &[u8], &str); 4] = [
            (
                "no-server",
                b"apiVersion: v1\nkind: Config\nclusters: []\n",
                "has no cluster `server:` URL",
            ),
            (
                "garbage",
                &[0xff, 0xfe, 0x00, 0x9c, b'\n'],
                "not a text file",
            ),
            (
                "bad-url",
                b"clusters:\n- cluster:\n    server: ftp://x\n",
                "bad server URL \"ftp://x\"",
            ),
            (
                "good",
                b"clusters:\n- cluster:\n    server: \"https://[2001:db8::2]:6443\"\n",
                "",
            ),
        ];
        for (name, body, want) in cases {
            let path = dir.join(name);
            std::fs::write(&path, body).unwrap();
            match server(&path) {
                Ok(s) => assert!(
                    want.is_empty() && s == ("2001:db8::2".into(), 6443),
                    "{name}: {s:?}"
                ),
                Err(e) => {
                    let line = format!("{e:#}");
                    assert!(!want.is_empty() && line.contains(want), "{name}: {line}");
                    assert!(
                        line.contains(&path.display().to_string()) && !line.contains('\n'),
                        "{line}"
                    );
                }
            }
        }
        let line = format!("{:#}", server(&dir).unwrap_err());
        assert!(line.contains("not a regular file"), "{line}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn server_urls() {
        assert_eq!(
            parse_url("https://api.example.com:6443").unwrap(),
            ("api.example.com".into(), 6443)
        );
        assert_eq!(
            parse_url("https://api.example.com/").unwrap(),
            ("api.example.com".into(), 443)
        );
        assert_eq!(
            parse_url("https://[2001:db8::2]:6443").unwrap(),
            ("2001:db8::2".into(), 6443)
        );
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("https://:6443").is_err());
    }
}
