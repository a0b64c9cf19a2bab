//! Scraping the agent's Prometheus endpoint from inside a lab namespace, and a strict
//! parser of the text exposition (every sample line must parse, the `# EOF` must be there).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};

/// `GET /metrics` at `addr` inside the network namespace at `netns` (a `/run/netns/...`
/// path). The request runs on a short-lived thread that joins the namespace, so the test
/// process itself stays where it is. Returns (status line, content type, body).
///
/// # Errors
/// When the namespace cannot be joined or the request fails.
pub fn scrape(netns: &str, addr: SocketAddr) -> Result<(String, String, String)> {
    let ns = std::fs::File::open(netns).with_context(|| format!("open {netns}"))?;
    let worker = std::thread::spawn(move || -> Result<String> {
        // SAFETY: setns on a valid namespace fd; it only changes this thread's namespace.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            bail!("setns: {}", std::io::Error::last_os_error());
        }
        let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        conn.set_read_timeout(Some(Duration::from_secs(5)))?;
        conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: lab\r\n\r\n")?;
        let mut out = String::new();
        conn.read_to_string(&mut out)?;
        Ok(out)
    });
    let raw = worker
        .join()
        .map_err(|_| anyhow::anyhow!("scrape thread panicked"))??;
    let (head, body) = raw.split_once("\r\n\r\n").context("no end of HTTP head")?;
    let status = head.lines().next().unwrap_or_default().to_owned();
    let ctype = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap_or_default()
        .to_owned();
    Ok((status, ctype, body.to_owned()))
}

/// The samples of the first scrape answered `200 OK` within 10 s (a server busy with a
/// crowd, or just given its descriptors back, may refuse a few first), polled every 100 ms.
///
/// # Errors
/// When none is answered in time (the error names `what`), or the answer does not parse.
pub fn scrape_until_ok(what: &str, netns: &str, addr: SocketAddr) -> Result<BTreeMap<String, f64>> {
    let body = crate::wait_until(
        what,
        Duration::from_secs(10),
        Duration::from_millis(100),
        || {
            Ok(scrape(netns, addr)
                .ok()
                .filter(|r| r.0 == "HTTP/1.1 200 OK")
                .map(|r| r.2))
        },
    )?;
    parse(&body)
}

/// Every sample: `name{labels}` exactly as exposed, to its value.
///
/// # Errors
/// On any line that is neither a comment nor `series value`, or without `# EOF`.
pub fn parse(text: &str) -> Result<BTreeMap<String, f64>> {
    ensure!(
        text.trim_end().ends_with("# EOF"),
        "no `# EOF` at the end:\n{text}"
    );
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line
            .rsplit_once(' ')
            .with_context(|| format!("bad sample {line:?}"))?;
        let value: f64 = value
            .parse()
            .with_context(|| format!("bad value in {line:?}"))?;
        let name = series.split('{').next().unwrap_or_default();
        ensure!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        ensure!(
            out.insert(series.to_owned(), value).is_none(),
            "duplicate series {series}"
        );
    }
    Ok(out)
}
