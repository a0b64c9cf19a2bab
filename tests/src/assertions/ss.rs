//! What an operator would look at: `ss -tnoi state established` in a namespace.

use std::net::SocketAddr;

use anyhow::{Context, Result};

use crate::infra::netns::NetNs;

/// One established TCP socket as ss shows it.
#[derive(Clone, Debug)]
pub struct SsSocket {
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub recv_q: u64,
    pub send_q: u64,
    /// The rest of ss's text (timers, `tcp_info`) for failure messages.
    pub info: String,
}

impl SsSocket {
    /// Milliseconds since anything came from the peer: the lesser of ss's `lastrcv` (data)
    /// and `lastack`, the silence the kernel's keepalive counts from
    /// (`keepalive_time_elapsed()`).
    #[must_use]
    pub fn quiet_ms(&self) -> Option<u64> {
        let field = |name: &str| {
            self.info
                .split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.parse::<u64>().ok())
        };
        match (field("lastrcv:"), field("lastack:")) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// ss shows `retrans:CUR/TOTAL`; the total is what grows during a black hole.
    #[must_use]
    pub fn retransmits_total(&self) -> u64 {
        let field = self
            .info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("retrans:"));
        field
            .and_then(|r| r.split('/').nth(1)?.parse().ok())
            .unwrap_or(0)
    }
}

/// The ESTABLISHED TCP sockets in namespace `ns`.
///
/// # Errors
/// When ss fails or prints something unparseable.
pub fn established(ns: &NetNs) -> Result<Vec<SsSocket>> {
    // -H: no header. With a state filter ss leaves out the State column.
    let out = ns.exec("ss", &["-H", "-tnoi", "state", "established"])?;
    parse(&out)
}

/// Parses ss output: a socket line, then indented `tcp_info` lines belonging to it.
///
/// # Errors
/// When a socket line does not have the expected columns.
pub fn parse(out: &str) -> Result<Vec<SsSocket>> {
    let mut socks: Vec<SsSocket> = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        if line.starts_with(char::is_whitespace) {
            if let Some(last) = socks.last_mut() {
                last.info.push(' ');
                last.info.push_str(line.trim());
            }
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        let [recv_q, send_q, local, peer, ..] = cols[..] else {
            anyhow::bail!("unexpected ss line: {line:?}");
        };
        socks.push(SsSocket {
            recv_q: recv_q
                .parse()
                .with_context(|| format!("ss Recv-Q in {line:?}"))?,
            send_q: send_q
                .parse()
                .with_context(|| format!("ss Send-Q in {line:?}"))?,
            local: parse_addr(local)?,
            peer: parse_addr(peer)?,
            info: cols[4..].join(" "),
        });
    }
    Ok(socks)
}

/// ss prints `1.2.3.4:5` and `[2001:db8::1]:5` (sometimes with a `%iface` scope).
fn parse_addr(s: &str) -> Result<SocketAddr> {
    let cleaned = match (s.find('%'), s.rfind(']')) {
        (Some(p), Some(b)) if p < b => format!("{}{}", &s[..p], &s[b..]),
        _ => s.to_owned(),
    };
    cleaned
        .parse()
        .with_context(|| format!("bad address in ss output: {s:?}"))
}

/// The established socket with this local port and peer, if any.
///
/// # Errors
/// When ss fails.
pub fn find(ns: &NetNs, local_port: u16, peer: SocketAddr) -> Result<Option<SsSocket>> {
    Ok(established(ns)?
        .into_iter()
        .find(|s| s.local.port() == local_port && s.peer == peer))
}

/// Text of all established sockets in `ns`, for failure messages.
#[must_use]
pub fn dump(ns: &NetNs) -> String {
    ns.exec("ss", &["-tnoi", "state", "established"])
        .unwrap_or_else(|e| format!("{e:#}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_v4_and_v6() {
        let out = "0      0      198.51.100.1:40000 198.51.100.2:6443 timer:(on,200ms,0)\n\t cubic wscale:7,7 retrans:1/6\n\
                   0 517 [2001:db8::1]:40002 [2001:db8::2]:6443\n";
        let s = super::parse(out).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].local.port(), 40000);
        assert!(s[0].info.contains("cubic"));
        assert_eq!(s[1].send_q, 517);
        assert_eq!(s[0].retransmits_total(), 6);
        assert_eq!(s[1].peer, "[2001:db8::2]:6443".parse().unwrap());
    }
}
