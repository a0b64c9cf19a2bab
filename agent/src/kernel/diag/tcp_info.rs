//! The few `struct tcp_info` fields lifeline reads (`include/uapi/linux/tcp.h`), decoded into
//! the judge's own view of them (`lifeline_judge::TcpInfo`: plain data, no netlink).
//!
//! Decoded by offset from the `INET_DIAG_INFO` attribute rather than by casting, so a
//! shorter struct from an older kernel reads as zeros instead of out of bounds.

pub(crate) use lifeline_judge::TcpInfo;

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8).map_or(0, |s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_ne_bytes(a)
    })
}

/// Offsets follow `struct tcp_info` field order: eight u8 fields, then u32s from `tcpi_rto`
/// at 8, then the u64s from `tcpi_pacing_rate` at 104, `tcpi_notsent_bytes` at 144.
#[must_use]
pub(super) fn parse(b: &[u8]) -> TcpInfo {
    let byte = |i: usize| b.get(i).copied().unwrap_or(0);
    TcpInfo {
        state: byte(0),
        retransmits: byte(2),
        probes: byte(3),
        backoff: byte(4),
        rto_us: u32_at(b, 8),
        unacked: u32_at(b, 24),
        last_data_sent_ms: u32_at(b, 44),
        last_data_recv_ms: u32_at(b, 52),
        last_ack_recv_ms: u32_at(b, 56),
        rtt_us: u32_at(b, 68),
        total_retrans: u32_at(b, 100),
        bytes_acked: u64_at(b, 120),
        bytes_received: u64_at(b, 128),
        notsent_bytes: u32_at(b, 144),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parses_fields_at_uapi_offsets_and_tolerates_short_structs() {
        let mut b = vec![0u8; 232];
        b[0] = 1;
        b[2] = 3;
        b[24..28].copy_from_slice(&2u32.to_ne_bytes());
        b[56..60].copy_from_slice(&12_345u32.to_ne_bytes());
        b[120..128].copy_from_slice(&99u64.to_ne_bytes());
        b[144..148].copy_from_slice(&7u32.to_ne_bytes());
        let i = parse(&b);
        assert_eq!((i.state, i.retransmits, i.unacked), (1, 3, 2));
        assert_eq!(i.notsent_bytes, 7);
        assert_eq!((i.last_ack_recv_ms, i.bytes_acked), (12_345, 99));
        let short = parse(&b[..60]);
        assert_eq!((short.last_ack_recv_ms, short.bytes_acked), (12_345, 0));
    }
}
