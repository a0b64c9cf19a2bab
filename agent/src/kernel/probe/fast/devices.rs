//! The agent's own network namespace's devices, without `NETLINK_ROUTE` (a pod's seccomp
//! profile refuses it): their names and transmit counters from `/proc/net/dev` (the reading
//! thread's namespace: `/proc/net` is `/proc/self/net`), their type and index by `ioctl`.

use std::collections::HashMap;

/// Each device's transmitted packets, by name, as `/proc/net/dev` shows them (the eight
/// receive columns first, then bytes and packets sent: `dev_seq_printf_stats()` in
/// <https://github.com/torvalds/linux/blob/v6.18/net/core/net-procfs.c>).
#[must_use]
pub(super) fn parse_tx(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(':')?;
            let tx = rest.split_whitespace().nth(9)?.parse().ok()?;
            Some((name.trim().to_owned(), tx))
        })
        .collect()
}

/// `parse_tx` of this namespace's `/proc/net/dev`; empty when unreadable.
#[must_use]
pub(super) fn tx_packets() -> HashMap<String, u64> {
    std::fs::read_to_string("/proc/net/dev")
        .map(|t| parse_tx(&t))
        .unwrap_or_default()
}

/// The device's index when it is Ethernet (`ARPHRD_ETHER`), asked of the agent's own
/// network namespace with `SIOCGIFHWADDR`/`SIOCGIFINDEX` (sysfs may be another namespace's).
#[must_use]
pub(super) fn ethernet_index(dev: &str) -> Option<u32> {
    use std::os::fd::AsRawFd as _;
    let sock = crate::kernel::sockopts::tcp_socket().ok()?;
    // SAFETY: a plain C struct; all zeroes is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let name = dev.as_bytes();
    if name.len() >= req.ifr_name.len() {
        return None;
    }
    for (d, s) in req.ifr_name.iter_mut().zip(name) {
        *d = libc::c_char::from_ne_bytes([*s]);
    }
    // SAFETY: `req` is a valid ifreq with a NUL-terminated name; the kernel fills the union.
    // `as _`: the request's type differs between glibc and musl.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR as _, &raw mut req) } != 0 {
        return None;
    }
    // SAFETY: SIOCGIFHWADDR filled `ifru_hwaddr`.
    if unsafe { req.ifr_ifru.ifru_hwaddr.sa_family } != libc::ARPHRD_ETHER {
        return None;
    }
    // SAFETY: as above, for the index.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFINDEX as _, &raw mut req) } != 0 {
        return None;
    }
    // SAFETY: SIOCGIFINDEX filled `ifru_ifindex`.
    u32::try_from(unsafe { req.ifr_ifru.ifru_ifindex }).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn transmitted_packets_are_the_tenth_number_after_the_name() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0: 9876543   12345    0    3    0     0          0         7  5432100    6789    0    0    0     0       0          0
";
        let tx = super::parse_tx(text);
        assert_eq!(tx.get("eth0"), Some(&6789));
        assert_eq!(tx.get("lo"), Some(&10));
        assert_eq!(tx.len(), 2, "the two header lines are no device");
    }
}
