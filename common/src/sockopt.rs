//! The application's own keepalive calls on a watched socket, merged with lifeline's.
//!
//! Go's `net.Dialer` (kubelet, client-go, etcd's client) turns keepalive on and sets its
//! idle, interval and (from Go 1.23) count with `setsockopt` right after `connect()` returns:
//! after the `sock_ops` ESTABLISHED callback armed lifeline's values, so the application's
//! looser ones would win. The `cgroup/setsockopt` hook (Linux 5.3) sees each of those calls
//! on a watched socket before the kernel applies it and rewrites the value with the rules
//! below, which the ESTABLISHED arming uses too, so the order of events never matters.
//!
//! The rules keep lifeline's false-kill arithmetic (docs/ARCHITECTURE.md, "Idle
//! connections"): the kernel gives up on an idle peer no sooner than lifeline's COUNT probes
//! at lifeline's INTERVAL, unless the application itself asked to give up sooner.

use crate::Keepalive;

/// `TUPLES` key: a watched socket's addresses as the `setsockopt` hook sees them
/// (`struct bpf_sock`), so the hook can find the socket's record without its cookie (the
/// hook has no `bpf_get_socket_cookie`). Addresses in network order, IPv4 in the first four
/// bytes; ports in host order.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SockKey {
    pub local: [u8; 16],
    pub peer: [u8; 16],
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    pub local_port: u16,
    pub peer_port: u16,
    /// Explicit padding, always 0 (the key is hashed byte by byte).
    pub pad: u16,
}

const _: () = assert!(core::mem::size_of::<SockKey>() == 40);

impl SockKey {
    /// A record's addresses as its `TUPLES` key: the one key `sock_ops` writes, the
    /// agent's seed writes, and both remove with the record.
    #[must_use]
    pub const fn of(s: &crate::SockState) -> Self {
        Self {
            local: s.local_addr,
            peer: s.peer_addr,
            family: s.family,
            local_port: s.local_port,
            peer_port: s.peer_port,
            pad: 0,
        }
    }
}

/// `TUPLES` value: which record, and what the application asked for itself.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppSet {
    /// The socket's cookie: its `SOCKETS` key.
    pub cookie: u64,
    /// The `TCP_KEEPINTVL` the application asked for; 0: none yet.
    pub intvl_s: u32,
    /// How many keepalive options the application set on the socket since it was watched.
    pub calls: u32,
}

const _: () = assert!(core::mem::size_of::<AppSet>() == 16);

/// `TCP_KEEPIDLE` and `TCP_KEEPINTVL`: the shorter of the application's and lifeline's
/// (0, "not set", counts as the loosest).
#[must_use]
pub const fn shorter(app: u32, want: u32) -> u32 {
    if app != 0 && app < want { app } else { want }
}

/// `TCP_KEEPCNT`: lifeline's, unless the application's own interval is already at or
/// below lifeline's and its probes give up no later than lifeline's would
/// (`app_intvl` x `app_cnt` <= INTERVAL x COUNT): then the application chose to give up
/// sooner, with probes at least as frequent, and keeps its count. A count alone (its
/// interval unknown or longer) would, at lifeline's interval, give up after fewer probes than
/// the arithmetic allows, so it is replaced.
#[must_use]
pub const fn count(app_cnt: u32, app_intvl: u32, want: &Keepalive) -> u32 {
    if app_cnt != 0
        && app_intvl != 0
        && app_intvl <= want.intvl_s
        && app_intvl.saturating_mul(app_cnt) <= want.intvl_s.saturating_mul(want.cnt)
    {
        app_cnt
    } else {
        want.cnt
    }
}

#[cfg(feature = "user")]
// SAFETY: `repr(C)`, explicit padding, size checked above; any bit pattern is valid.
unsafe impl aya::Pod for SockKey {}
#[cfg(feature = "user")]
// SAFETY: as above.
unsafe impl aya::Pod for AppSet {}

#[cfg(test)]
mod tests {
    use super::*;

    const WANT: Keepalive = Keepalive {
        idle_s: 2,
        intvl_s: 1,
        cnt: 20,
        user_timeout_ms: 0,
    };

    #[test]
    fn go_dialer_values_are_tightened_to_lifelines() {
        // kubelet: 30 s idle and interval, count 9 (Go 1.23+).
        assert_eq!(shorter(30, WANT.idle_s), 2);
        assert_eq!(shorter(30, WANT.intvl_s), 1);
        assert_eq!(count(9, 30, &WANT), 20, "9 probes at 1 s would be too few");
        assert_eq!(count(9, 0, &WANT), 20, "interval unknown: lifeline's count");
    }

    #[test]
    fn an_application_that_gives_up_sooner_keeps_its_values() {
        assert_eq!(shorter(1, 5), 1);
        assert_eq!(count(5, 1, &WANT), 5, "1 s x 5 gives up before 1 s x 20");
        assert_eq!(
            count(30, 1, &WANT),
            20,
            "1 s x 30 gives up later: lifeline's"
        );
        assert_eq!(shorter(0, 2), 2, "0 is not a value");
    }
}
