//! Value parsers for the command line: each names the flag, the value and what is allowed,
//! so clap's one-line error says everything (the config file reuses them too).

use std::time::Duration;

use super::{KeepaliveArg, KeepaliveSpec};

pub(super) fn parse_port(s: &str) -> Result<u16, String> {
    match s.trim().parse::<u32>() {
        Ok(p) if (1..=65_535).contains(&p) => Ok(u16::try_from(p).unwrap_or_default()),
        _ => Err(format!(
            "invalid port '{s}': expected a number from 1 to 65535"
        )),
    }
}

/// `NAME:PORT`, `IPV4:PORT` or `[IPV6]:PORT`.
pub(super) fn parse_endpoint(s: &str) -> Result<(String, u16), String> {
    let bad = |why: &str| {
        format!("invalid --endpoint '{s}': {why} (expected NAME:PORT, e.g. api.example.com:6443)")
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    let (host, bracketed) = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(h) => (h, true),
        None => (host, false),
    };
    if host.is_empty()
        || host.contains(':') && (!bracketed || host.parse::<std::net::Ipv6Addr>().is_err())
    {
        return Err(bad("bad host (write IPv6 addresses as [ADDR]:PORT)"));
    }
    Ok((host.to_owned(), parse_port(port).map_err(|e| bad(&e))?))
}

pub(super) fn parse_dns_server(s: &str) -> Result<std::net::SocketAddr, String> {
    s.parse::<std::net::SocketAddr>()
        .or_else(|_| {
            s.parse::<std::net::IpAddr>()
                .map(|ip| std::net::SocketAddr::new(ip, 53))
        })
        .map_err(|_| format!("invalid --dns-server '{s}': expected IP or IP:PORT"))
}

pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("invalid duration '{s}': {e} (e.g. 10s, 500ms)"))?;
    if d.is_zero() {
        return Err(format!("invalid duration '{s}': must be greater than zero"));
    }
    Ok(d)
}

/// `IDLE,INTERVAL,COUNT` (e.g. `10s,3s,3`) within the kernel's limits, or `off`.
pub(super) fn parse_keepalive(s: &str) -> Result<KeepaliveSpec, String> {
    use lifeline_common::keepalive::{MAX_KEEPCNT, MAX_KEEPIDLE_S, MAX_KEEPINTVL_S};
    if s.trim() == "off" {
        return Ok(KeepaliveSpec(None));
    }
    let bad = |why: &str| {
        format!(
            "invalid --keepalive '{s}': {why} (expected IDLE,INTERVAL,COUNT like 10s,3s,3, or off)"
        )
    };
    let [idle, interval, count] = s.split(',').map(str::trim).collect::<Vec<_>>()[..] else {
        return Err(bad("three comma-separated values needed"));
    };
    let secs = |v: &str, max: u32| -> Result<Duration, String> {
        let d = parse_duration(v).map_err(|e| bad(&e))?;
        if d.subsec_nanos() != 0 || d.as_secs() > u64::from(max) {
            return Err(bad(&format!(
                "'{v}' must be whole seconds from 1s to {max}s"
            )));
        }
        Ok(d)
    };
    let count: u32 = count
        .parse()
        .ok()
        .filter(|c| (1..=MAX_KEEPCNT).contains(c))
        .ok_or_else(|| {
            bad(&format!(
                "COUNT '{count}' must be a number from 1 to {MAX_KEEPCNT}"
            ))
        })?;
    Ok(KeepaliveSpec(Some(KeepaliveArg {
        idle: secs(idle, MAX_KEEPIDLE_S)?,
        interval: secs(interval, MAX_KEEPINTVL_S)?,
        count,
    })))
}

pub(super) fn parse_user_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.as_millis() > i32::MAX as u128 {
        return Err(format!(
            "invalid duration '{s}': at most {} ms (TCP_USER_TIMEOUT is an int)",
            i32::MAX
        ));
    }
    Ok(d)
}

/// `--fast-probes`: `off`, or an interval from 50 ms to 1 s (`lifeline_common::poke`).
pub(super) fn parse_fast_probes(s: &str) -> Result<FastProbesArg, String> {
    use lifeline_common::poke::{MAX_INTERVAL_MS, MIN_INTERVAL_MS};
    if s.trim() == "off" {
        return Ok(FastProbesArg(None));
    }
    let d = parse_duration(s)?;
    let range = Duration::from_millis(MIN_INTERVAL_MS)..=Duration::from_millis(MAX_INTERVAL_MS);
    if !range.contains(&d) {
        return Err(format!(
            "invalid --fast-probes '{s}': an interval from {MIN_INTERVAL_MS}ms to {MAX_INTERVAL_MS}ms, or off"
        ));
    }
    Ok(FastProbesArg(Some(d)))
}

/// A parsed `--fast-probes`; `None`: off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FastProbesArg(pub Option<Duration>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_probes_are_an_interval_in_range_or_off() {
        assert_eq!(parse_fast_probes("off"), Ok(FastProbesArg(None)));
        assert_eq!(
            parse_fast_probes("100ms"),
            Ok(FastProbesArg(Some(Duration::from_millis(100))))
        );
        assert!(
            parse_fast_probes("10ms")
                .unwrap_err()
                .contains("--fast-probes")
        );
        assert!(
            parse_fast_probes("2s")
                .unwrap_err()
                .contains("50ms to 1000ms")
        );
        assert!(parse_fast_probes("soon").is_err());
    }

    #[test]
    fn ports_and_durations_are_validated() {
        assert_eq!(parse_port("6443"), Ok(6443));
        assert!(parse_port("70000").unwrap_err().contains("70000"));
        assert!(parse_port("0").is_err());
        assert!(parse_port("abc").unwrap_err().contains("port"));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("ten").is_err());
    }

    #[test]
    fn endpoints_and_dns_servers_are_validated() {
        assert_eq!(
            parse_endpoint("api.lab.test:6443"),
            Ok(("api.lab.test".into(), 6443))
        );
        assert_eq!(
            parse_endpoint("[2001:db8::2]:6443"),
            Ok(("2001:db8::2".into(), 6443))
        );
        assert!(
            parse_endpoint("api.lab.test")
                .unwrap_err()
                .contains("no port")
        );
        assert!(
            parse_endpoint("2001:db8::2:6443")
                .unwrap_err()
                .contains("IPv6")
        );
        assert!(parse_endpoint("api:0").is_err());
        assert_eq!(parse_dns_server("198.51.100.53").unwrap().port(), 53);
        assert!(parse_dns_server("dns.example").is_err());
    }

    #[test]
    fn keepalive_is_validated() {
        let ka = parse_keepalive("10s,3s,3").unwrap().0.unwrap();
        assert_eq!(
            (ka.idle, ka.interval, ka.count),
            (Duration::from_secs(10), Duration::from_secs(3), 3)
        );
        assert_eq!(parse_keepalive("off"), Ok(KeepaliveSpec(None)));
        assert!(parse_keepalive("10s,3s").unwrap_err().contains("three"));
        assert!(parse_keepalive("10s,3s,0").unwrap_err().contains("COUNT"));
        assert!(
            parse_keepalive("1500ms,3s,3")
                .unwrap_err()
                .contains("whole seconds")
        );
        assert!(parse_keepalive("10h,3s,3").unwrap_err().contains("32767"));
    }
}
