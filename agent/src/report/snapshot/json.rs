//! A row written as JSON by hand, byte for byte what its `Serialize` derive writes, and read
//! back by its `Deserialize` as the row it was (the test below checks both): `lifeline
//! status` writes 100,000 of them in one answer, and serde's
//! per-field calls and escaping scans of the constant keys were most of its time. Text that
//! does not come from lifeline itself (the owner's comm, the endpoint's name) still goes
//! through `serde_json`'s escaping.

use std::io::Write as _;

use super::StatusRow;

impl StatusRow<'_> {
    /// Append this row's JSON object to `out`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = write!(
            out,
            "{{\"cookie\":{},\"local\":\"{}\",\"peer\":\"{}\"",
            self.cookie, self.local, self.peer
        );
        if let Some(st) = &self.state {
            let _ = write!(out, ",\"state\":\"{st}\"");
        }
        if let Some(pid) = self.owner_pid {
            let _ = write!(out, ",\"owner_pid\":{pid}");
        }
        if let Some(comm) = &self.owner_comm {
            out.extend_from_slice(b",\"owner_comm\":");
            text(out, comm);
        }
        if let Some(o) = self.owner_state.label() {
            let _ = write!(out, ",\"owner_state\":\"{o}\"");
        }
        let _ = write!(
            out,
            ",\"established_age_ms\":{},\"last_ack_age_ms\":{}",
            self.established_age_ms, self.last_ack_age_ms
        );
        if let Some(t) = self.last_data_sent_age_ms {
            let _ = write!(out, ",\"last_data_sent_age_ms\":{t}");
        }
        if let Some(t) = self.last_data_recv_age_ms {
            let _ = write!(out, ",\"last_data_recv_age_ms\":{t}");
        }
        if let Some(t) = self.trouble_age_ms {
            let _ = write!(out, ",\"trouble_age_ms\":{t}");
        }
        let _ = write!(
            out,
            ",\"unacked_segs\":{},\"unacked_bytes\":{},\"retransmits\":{},\"rto_count\":{}",
            self.unacked_segs, self.unacked_bytes, self.retransmits, self.rto_count,
        );
        if let Some(t) = self.total_retrans {
            let _ = write!(out, ",\"total_retrans\":{t}");
        }
        let _ = write!(
            out,
            ",\"bytes_acked\":{},\"bytes_received\":{},\"verdict\":\"{}\",\"keepalive\":",
            self.bytes_acked, self.bytes_received, self.verdict
        );
        text(out, &self.keepalive);
        if let Some(p) = self.keepalive_probes {
            let _ = write!(out, ",\"keepalive_probes\":{p}");
        }
        if let Some(l) = &self.linear_timeouts {
            out.extend_from_slice(b",\"linear_timeouts\":");
            text(out, l);
        }
        if let Some(b) = self.probe_bytes {
            let _ = write!(out, ",\"probe_bytes\":{b}");
        }
        if let Some(e) = &self.endpoint {
            out.extend_from_slice(b",\"endpoint\":");
            text(out, e);
        }
        if let Some(m) = self.endpoint_member {
            let _ = write!(out, ",\"endpoint_member\":\"{}\"", m.as_str());
        }
        if let Some(b) = self.endpoint_socket {
            let _ = write!(out, ",\"endpoint_socket\":{b}");
        }
        let _ = write!(out, ",\"source\":\"{}\"", self.source.as_str());
        if let Some(p) = &self.polled {
            out.extend_from_slice(b",\"polled\":");
            text(out, p);
        }
        out.extend_from_slice(b",\"watched_by\":[");
        for (i, name) in self.watched_by.names().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let _ = write!(out, "\"{name}\"");
        }
        out.extend_from_slice(b"]}");
    }
}

/// A JSON string, escaped as `serde_json` escapes it.
fn text(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use lifeline_common::SockState;

    use super::super::{Extra, OwnerState, StatusRow, row};
    use crate::{
        endpoint::Standing,
        judge::{Cookie, Mono, Verdict},
        kernel::{
            diag::{DiagSock, TcpInfo},
            record::decode,
        },
    };

    /// The hand-written JSON and the derive's; the hand-written one must also read back as
    /// the row it was written from.
    fn both(rec: &SockState, x: &Extra<'_>) -> (String, String) {
        let rec = decode(rec);
        let r = row(Cookie(42), &rec, x, Mono::from_nanos(9_000_000_000));
        let mut hand = Vec::new();
        r.write_json(&mut hand);
        let back: StatusRow<'static> = serde_json::from_slice(&hand).unwrap();
        assert_eq!(back, r);
        (
            String::from_utf8(hand).unwrap(),
            serde_json::to_string(&r).unwrap(),
        )
    }

    #[test]
    fn hand_written_rows_are_what_serde_writes() {
        let reasons = lifeline_common::watch::BY_CGROUP | lifeline_common::watch::BY_COMM;
        let v4 = SockState {
            established_ns: 1,
            trouble_ns: 2_000_000_000,
            ..super::super::tests::v4_record(b"ku\"be\\let", reasons)
        };
        let info = TcpInfo {
            probes: 3,
            last_ack_recv_ms: 1_500,
            last_data_sent_ms: 2_500,
            last_data_recv_ms: 3_500,
            unacked: 2,
            retransmits: 1,
            total_retrans: 9,
            ..TcpInfo::default()
        };
        let kernel = DiagSock {
            local: v4.local(),
            peer: v4.peer(),
            state: 4,
            cookie: 42,
            inode: 0,
            uid: 0,
            send_q: 10,
            cgroup_id: None,
            info: Some(info),
        };
        let full = Extra {
            verdict: None,
            kernel: Some(&kernel),
            owner: OwnerState::Nobody,
            keepalive: "2s,1s,5 (app's, stricter)",
            endpoint: Some(("api.example:6443", Standing::NeverHeld)),
            endpoint_socket: Some(false),
        };
        let (hand, serde) = both(&v4, &full);
        assert_eq!(hand, serde);
        for key in [
            "\"state\":\"FIN-WAIT-1\"",
            "\"owner_state\":\"no owner\"",
            "\"last_data_recv_age_ms\":3500",
            "\"trouble_age_ms\":7000",
            "\"total_retrans\":9",
            "\"verdict\":\"closing\"",
        ] {
            assert!(serde.contains(key), "{key} in {serde}");
        }
        let mut v6 = SockState {
            family: 10,
            source: lifeline_common::sock::SOURCE_ADOPTED,
            adopt: lifeline_common::sock::ADOPT_PENDING,
            ..SockState::default()
        };
        v6.peer_addr[..2].copy_from_slice(&[0x20, 0x01]);
        let bare = Extra {
            verdict: Some(Verdict::Healthy),
            kernel: None,
            owner: OwnerState::Exited,
            keepalive: "off",
            endpoint: None,
            endpoint_socket: None,
        };
        let (hand, serde) = both(&v6, &bare);
        assert_eq!(hand, serde);
        assert!(serde.contains("\"polled\"") && serde.contains("\"watched_by\":[]"));
    }
}
