//! A dump of one range of local ports: the kernel's own filter (`INET_DIAG_REQ_BYTECODE`, the
//! same program `ss 'sport >= :A and sport <= :B'` sends), so a status answer at 100,000
//! sockets can be read as two halves on two netlink sockets at once. The filter runs in
//! `inet_diag_bc_run()` before a socket's `tcp_info` is filled, so each half pays the walk of
//! the TCP hash and only its own sockets' fill (most of a dump's cost,
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/inet_diag.c>).

/// `INET_DIAG_REQ_BYTECODE`: the request's attribute carrying the filter.
const REQ_BYTECODE: u16 = 1;
/// `INET_DIAG_BC_S_GE`, `INET_DIAG_BC_S_LE`: compare the local port.
const BC_S_GE: u8 = 2;
const BC_S_LE: u8 = 3;
/// One `inet_diag_bc_op`: code, yes, no (u8, u8, u16).
const OP: u16 = 4;

/// Local ports `lo..=hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

impl PortRange {
    #[must_use]
    pub(crate) fn contains(self, port: u16) -> bool {
        (self.lo..=self.hi).contains(&port)
    }

    /// The two halves of `ports` by count: below the median and from it on. `None` when one
    /// half would be empty (every port the same, or the lowest is the median).
    #[must_use]
    pub(crate) fn halves(ports: &mut [u16]) -> Option<(Self, Self)> {
        let n = ports.len() / 2;
        if n == 0 {
            return None;
        }
        let (_, mid, _) = ports.select_nth_unstable(n);
        let mid = *mid;
        let below = mid.checked_sub(1)?;
        ports[..n].iter().any(|p| *p < mid).then_some((
            Self { lo: 0, hi: below },
            Self {
                lo: mid,
                hi: u16::MAX,
            },
        ))
    }

    /// The request's attribute: `sport >= lo` and `sport <= hi`. Each test's "no" jumps past
    /// the end of the program (4 bytes beyond it), which `inet_diag_bc_run()` counts as a
    /// rejection; `inet_diag_bc_audit()` accepts no jump farther than that.
    #[must_use]
    pub(crate) fn attribute(self) -> [u8; 20] {
        let program = 4 * OP;
        let mut a = [0u8; 20];
        a[0..2].copy_from_slice(&(4 + program).to_ne_bytes());
        a[2..4].copy_from_slice(&REQ_BYTECODE.to_ne_bytes());
        let ops = [
            (BC_S_GE, program + 4, self.lo),
            (BC_S_LE, 2 * OP + 4, self.hi),
        ];
        for (i, (code, no, port)) in ops.into_iter().enumerate() {
            let at = 4 + i * 8;
            a[at] = code;
            a[at + 1] = 2 * 4; // yes: the next test
            a[at + 2..at + 4].copy_from_slice(&no.to_ne_bytes());
            // The operand: an op whose `no` is the port.
            a[at + 6..at + 8].copy_from_slice(&port.to_ne_bytes());
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_split_by_count_at_the_median() {
        let mut ports = vec![40_000, 40_001, 1_024, 60_000, 33_000, 50_000];
        let (lo, hi) = PortRange::halves(&mut ports).unwrap();
        assert_eq!(lo, PortRange { lo: 0, hi: 40_000 });
        assert_eq!(
            hi,
            PortRange {
                lo: 40_001,
                hi: 65_535
            }
        );
        let (below, from) = [1_024, 33_000, 40_000, 40_001, 50_000, 60_000]
            .iter()
            .partition::<Vec<u16>, _>(|p| lo.contains(**p));
        assert_eq!((below.len(), from.len()), (3, 3));
        assert!(from.iter().all(|p| hi.contains(*p)));
    }

    #[test]
    fn no_halves_when_one_would_be_empty() {
        assert_eq!(PortRange::halves(&mut [7]), None);
        assert_eq!(PortRange::halves(&mut [40_000; 10]), None);
        assert_eq!(PortRange::halves(&mut [0, 0, 0, 5]), None);
    }

    #[test]
    fn the_program_is_what_ss_sends() {
        // `ss -D - 'sport >= :1024 and sport <= :40000'`, as bytes: two tests of 8 bytes,
        // each rejecting by a jump 4 bytes past the end.
        let a = PortRange {
            lo: 1_024,
            hi: 40_000,
        }
        .attribute();
        let u16_at = |o: usize| u16::from_ne_bytes([a[o], a[o + 1]]);
        assert_eq!((u16_at(0), u16_at(2)), (20, REQ_BYTECODE));
        assert_eq!((a[4], a[5], u16_at(6), u16_at(10)), (BC_S_GE, 8, 20, 1_024));
        assert_eq!(
            (a[12], a[13], u16_at(14), u16_at(18)),
            (BC_S_LE, 8, 12, 40_000)
        );
    }

    /// The kernel takes the program and filters by it: a listener of this process is listed
    /// by a dump of its own port's range and by no other (a dump needs no privilege, and a
    /// listener sends nothing).
    #[test]
    fn the_kernel_filters_by_the_range() {
        use super::super::{Diag, STATE_LISTEN, SockDiag};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut diag = SockDiag::open().unwrap();
        let mut listed = |ports| {
            let mut n = 0;
            Diag::dump_ports(&mut diag, 2, STATE_LISTEN, ports, &mut |d| {
                n += usize::from(d.local.port() == port);
            })
            .unwrap();
            n
        };
        assert_eq!(listed(PortRange { lo: port, hi: port }), 1);
        let around = PortRange {
            lo: port.saturating_sub(1),
            hi: port.saturating_add(1),
        };
        assert_eq!(listed(around), 1);
        assert_eq!(
            listed(PortRange {
                lo: 0,
                hi: port - 1
            }),
            0
        );
        let above = PortRange {
            lo: port + 1,
            hi: u16::MAX,
        };
        assert_eq!(listed(above), 0);
    }
}
