//! The API server endpoint from kubelet's kubeconfig: the cluster's `server:` URL.
//!
//! Only that one key matters, so a line scan is enough (no YAML parser): the first
//! `server: https://HOST[:PORT]` under `clusters`, HOST possibly a bracketed IPv6 literal.

use std::path::Path;

use anyhow::{Context as _, Result, anyhow, bail};

/// `(host, port)` of the first cluster's server.
///
/// # Errors
/// When the file cannot be read or has no usable `server:` URL.
pub fn server(path: &Path) -> Result<(String, u16)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
    let url = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("server:"))
        .map(|v| v.trim().trim_matches(|c| c == '"' || c == '\''))
        .next()
        .ok_or_else(|| anyhow!("kubeconfig {} has no cluster `server:` URL", path.display()))?;
    parse_url(url).with_context(|| format!("kubeconfig {}: bad server URL {url:?}", path.display()))
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
    use super::parse_url;

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
