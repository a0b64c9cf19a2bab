//! A row written as JSON by hand, byte for byte what its `Serialize` derive writes, and read
//! back by its `Deserialize` as the row it was (the test below checks both): `lifeline
//! status` writes 100,000 of them in one answer, and serde's per-field calls and escaping
//! scans of the constant keys were most of its time; then `write!`'s formatting machinery
//! for the 15-odd integers and two addresses of a row, so integers go through `itoa` and an
//! IPv4 address is written octet by octet. Text that does not come from lifeline itself (the
//! owner's comm, the endpoint's name) still goes through `serde_json`'s escaping.

use std::{io::Write as _, net::SocketAddr};

use super::StatusRow;

impl StatusRow<'_> {
    /// Append this row's JSON object to `out`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        let mut w = Row {
            out,
            n: itoa::Buffer::new(),
        };
        w.raw("{\"cookie\":");
        w.num(self.cookie);
        w.raw(",\"local\":\"");
        w.addr(&self.local);
        w.raw("\",\"peer\":\"");
        w.addr(&self.peer);
        w.raw("\"");
        if let Some(st) = &self.state {
            w.word(",\"state\":", st);
        }
        w.opt(",\"owner_pid\":", self.owner_pid);
        if let Some(comm) = &self.owner_comm {
            w.raw(",\"owner_comm\":");
            text(w.out, comm);
        }
        if let Some(o) = self.owner_state.label() {
            w.word(",\"owner_state\":", o);
        }
        w.raw(",\"established_age_ms\":");
        w.num(self.established_age_ms);
        w.raw(",\"last_ack_age_ms\":");
        w.num(self.last_ack_age_ms);
        w.opt(",\"last_data_sent_age_ms\":", self.last_data_sent_age_ms);
        w.opt(",\"last_data_recv_age_ms\":", self.last_data_recv_age_ms);
        w.opt(",\"trouble_age_ms\":", self.trouble_age_ms);
        w.raw(",\"unacked_segs\":");
        w.num(self.unacked_segs);
        w.raw(",\"unacked_bytes\":");
        w.num(self.unacked_bytes);
        w.raw(",\"retransmits\":");
        w.num(self.retransmits);
        w.raw(",\"rto_count\":");
        w.num(self.rto_count);
        w.opt(",\"total_retrans\":", self.total_retrans);
        w.raw(",\"bytes_acked\":");
        w.num(self.bytes_acked);
        w.raw(",\"bytes_received\":");
        w.num(self.bytes_received);
        w.word(",\"verdict\":", &self.verdict);
        w.raw(",\"keepalive\":");
        text(w.out, &self.keepalive);
        w.opt(",\"keepalive_probes\":", self.keepalive_probes);
        if let Some(l) = &self.linear_timeouts {
            w.raw(",\"linear_timeouts\":");
            text(w.out, l);
        }
        w.opt(",\"probe_bytes\":", self.probe_bytes);
        if let Some(e) = &self.endpoint {
            w.raw(",\"endpoint\":");
            text(w.out, e);
        }
        if let Some(m) = self.endpoint_member {
            w.word(",\"endpoint_member\":", m.as_str());
        }
        if let Some(b) = self.endpoint_socket {
            w.raw(if b {
                ",\"endpoint_socket\":true"
            } else {
                ",\"endpoint_socket\":false"
            });
        }
        w.word(",\"source\":", self.source.as_str());
        if let Some(p) = &self.polled {
            w.raw(",\"polled\":");
            text(w.out, p);
        }
        w.raw(",\"watched_by\":[");
        for (i, name) in self.watched_by.names().enumerate() {
            if i > 0 {
                w.raw(",");
            }
            w.word("", name);
        }
        w.raw("]}");
    }
}

/// The row's bytes and one integer buffer for all of its numbers.
struct Row<'a> {
    out: &'a mut Vec<u8>,
    n: itoa::Buffer,
}

impl Row<'_> {
    fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    fn num(&mut self, v: impl itoa::Integer) {
        self.out.extend_from_slice(self.n.format(v).as_bytes());
    }

    fn opt(&mut self, key: &str, v: Option<impl itoa::Integer>) {
        if let Some(v) = v {
            self.raw(key);
            self.num(v);
        }
    }

    /// `key` and a quoted word lifeline chose (a label: nothing to escape).
    fn word(&mut self, key: &str, w: &str) {
        self.raw(key);
        self.out.push(b'"');
        self.raw(w);
        self.out.push(b'"');
    }

    /// As `SocketAddr`'s `Display` writes it.
    fn addr(&mut self, a: &SocketAddr) {
        match a {
            SocketAddr::V4(v4) => {
                for (i, o) in v4.ip().octets().into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(b'.');
                    }
                    self.num(o);
                }
                self.out.push(b':');
                self.num(v4.port());
            }
            // Rare on a node, and its compression rules are `Display`'s own.
            SocketAddr::V6(_) => {
                // Writing into a Vec cannot fail.
                let _ = write!(self.out, "{a}");
            }
        }
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
