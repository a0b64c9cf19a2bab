//! Which device a peer is routed through, from the main routing tables as procfs shows them
//! for the reader's network namespace (`/proc/net/route`, `/proc/net/ipv6_route`: the
//! namespace's own, without a `NETLINK_ROUTE` socket, which the pod's seccomp profile
//! refuses). Longest prefix, then lowest metric; policy routing (`ip rule`) is not
//! followed, so a node that steers the API elsewhere by rule gets the main table's device.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One route: the destination prefix, its metric and device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub dest: IpAddr,
    pub prefix: u8,
    pub metric: u32,
    pub device: String,
}

/// The routes of `/proc/net/route` (IPv4: little-endian hex words) and
/// `/proc/net/ipv6_route` (IPv6: big-endian hex); unreadable lines are skipped.
#[must_use]
pub(crate) fn parse(v4: &str, v6: &str) -> Vec<Route> {
    let mut routes: Vec<Route> = v4.lines().skip(1).filter_map(parse_v4).collect();
    routes.extend(v6.lines().filter_map(parse_v6));
    routes
}

fn parse_v4(line: &str) -> Option<Route> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let (device, dest, metric, mask) = (f.first()?, f.get(1)?, f.get(6)?, f.get(7)?);
    // A network-order word printed as the host's (little-endian) integer.
    let word = |s: &str| u32::from_str_radix(s, 16).ok().map(u32::to_le_bytes);
    Some(Route {
        dest: IpAddr::V4(Ipv4Addr::from(word(dest)?)),
        prefix: u8::try_from(u32::from_be_bytes(word(mask)?).leading_ones()).ok()?,
        metric: metric.parse().ok()?,
        device: (*device).to_owned(),
    })
}

fn parse_v6(line: &str) -> Option<Route> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let (dest, prefix, metric, device) = (f.first()?, f.get(1)?, f.get(5)?, f.get(9)?);
    Some(Route {
        dest: IpAddr::V6(Ipv6Addr::from(u128::from_str_radix(dest, 16).ok()?)),
        prefix: u8::from_str_radix(prefix, 16).ok()?,
        metric: u32::from_str_radix(metric, 16).ok()?,
        device: (*device).to_owned(),
    })
}

/// The device `peer` leaves through: the most specific route that covers it.
#[must_use]
pub(crate) fn device_for(routes: &[Route], peer: IpAddr) -> Option<&str> {
    routes
        .iter()
        .filter(|r| covers(r, peer))
        .max_by(|a, b| a.prefix.cmp(&b.prefix).then(b.metric.cmp(&a.metric)))
        .map(|r| r.device.as_str())
}

fn covers(r: &Route, peer: IpAddr) -> bool {
    let keep = |bits: u32, width: u32| -> u128 {
        if bits == 0 {
            0
        } else {
            u128::MAX << (width - bits.min(width))
        }
    };
    match (r.dest, peer) {
        (IpAddr::V4(d), IpAddr::V4(p)) => {
            let m = keep(u32::from(r.prefix), 32);
            u128::from(u32::from(d)) & m == u128::from(u32::from(p)) & m
        }
        (IpAddr::V6(d), IpAddr::V6(p)) => {
            let m = keep(u32::from(r.prefix), 128);
            u128::from(d) & m == u128::from(p) & m
        }
        _ => false,
    }
}

/// The routes of the agent's network namespace now; empty when procfs cannot be read.
#[must_use]
pub(crate) fn read() -> Vec<Route> {
    let v4 = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let v6 = std::fs::read_to_string("/proc/net/ipv6_route").unwrap_or_default();
    parse(&v4, &v6)
}

#[cfg(test)]
mod tests {
    use super::*;

    const V4: &str = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
llv\t0064A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
    const V6: &str = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0\n\
fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     llv\n\
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n";

    #[test]
    fn the_longest_prefix_names_the_device() {
        let routes = parse(V4, V6);
        assert_eq!(routes.len(), 6);
        let at = |s: &str| device_for(&routes, s.parse().unwrap());
        assert_eq!(at("192.168.100.7"), Some("llv"));
        assert_eq!(at("192.0.2.9"), Some("eth0"));
        assert_eq!(at("198.51.100.2"), Some("eth0"), "the default route");
        assert_eq!(at("fd00::5"), Some("llv"));
        assert_eq!(at("2001:db8::1"), Some("eth0"));
        assert_eq!(at("::1"), Some("lo"));
    }

    #[test]
    fn garbage_is_skipped() {
        assert!(parse("header\nnot a route\n", "short line\n").is_empty());
    }
}
