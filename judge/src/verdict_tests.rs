//! The verdict rules, one witness at a time: records and `tcp_info` values made up.

use super::*;

const STALL: Stall = Stall::new(Duration::from_secs(10), 8);

fn rec(last_ack_s: u64, trouble_s: u64, packets_out: u32) -> Record {
    Record {
        state: crate::TcpState::Established,
        last_ack: Mono::from_secs(last_ack_s),
        trouble: (trouble_s != 0).then(|| Mono::from_secs(trouble_s)),
        packets_out,
        rto_count: 5,
        ..Default::default()
    }
}

#[test]
fn record_verdicts() {
    let now = Mono::from_secs(100);
    let closing = Record {
        state: crate::TcpState::FinWait1,
        ..rec(0, 1, 1)
    };
    let cases = [
        (rec(99, 0, 3), Verdict::Healthy, "busy, ACKed"),
        (rec(10, 0, 0), Verdict::Idle, "quiet"),
        (rec(80, 95, 1), Verdict::Suspect, "retransmitting 5 s"),
        (rec(80, 89, 1), Verdict::Stalled, "unanswered 11 s, 5 RTOs"),
        (
            Record {
                rto_count: 1,
                ..rec(80, 89, 1)
            },
            Verdict::Suspect,
            "11 s but one RTO: backed off, not 6 transmissions",
        ),
        (
            Record {
                rto_count: 8,
                ..rec(80, 98, 1)
            },
            Verdict::Stalled,
            "8 RTOs in a row within 2 s: linear timeouts",
        ),
        (rec(80, 89, 0), Verdict::Idle, "trouble healed, nothing out"),
        (closing, Verdict::Healthy, "not ours once closing"),
    ];
    for (record, want, why) in cases {
        assert_eq!(from_record(&record, now, STALL), want, "{why}");
    }
}

#[test]
fn silent_needs_enough_unanswered_probes_and_the_silent_timeout() {
    let t = Some(Silence {
        after: Duration::from_secs(16),
        probes: 2,
    });
    let idle = |last_ack_ms, probes| TcpInfo {
        state: 1,
        last_ack_recv_ms: last_ack_ms,
        probes,
        ..Default::default()
    };
    assert_eq!(from_info(&idle(17_000, 2), STALL, t), Verdict::Silent);
    assert_eq!(
        from_info(&idle(12_000, 1), STALL, t),
        Verdict::Suspect,
        "probing, not yet long enough"
    );
    assert_eq!(
        from_info(&idle(60_000, 0), STALL, t),
        Verdict::Idle,
        "probes answered"
    );
    assert_eq!(
        from_info(&idle(17_000, 1), STALL, t),
        Verdict::Suspect,
        "one probe unanswered is not enough, however long"
    );
    assert_eq!(
        from_info(&idle(17_000, 2), STALL, None),
        Verdict::Suspect,
        "keepalive off: never silent"
    );
}

fn info(unacked: u32, last_ack_ms: u32, retransmits: u8) -> TcpInfo {
    TcpInfo {
        state: 1,
        unacked,
        last_ack_recv_ms: last_ack_ms,
        retransmits,
        ..Default::default()
    }
}

#[test]
fn kernel_verdicts_need_unacked_data_and_silence() {
    let t = Some(Silence {
        after: Duration::from_secs(16),
        probes: 2,
    });
    assert_eq!(from_info(&info(2, 12_000, 5), STALL, t), Verdict::Stalled);
    assert_eq!(from_info(&info(2, 2_400, 8), STALL, t), Verdict::Stalled);
    assert_eq!(
        from_info(&info(2, 12_000, 1), STALL, t),
        Verdict::Suspect,
        "a bulk flow in deep backoff"
    );
    assert_eq!(
        from_info(&info(2, 3_000, 2), STALL, t),
        Verdict::Suspect,
        "slow but answering"
    );
    assert_eq!(
        from_info(&info(0, 60_000, 0), STALL, t),
        Verdict::Idle,
        "idle is not stalled"
    );
    assert_eq!(
        from_info(&info(5, 20, 0), STALL, t),
        Verdict::Healthy,
        "bulk transfer"
    );
}

#[test]
fn at_request_healthy_means_data_moved_and_closing_is_not_judged() {
    let t = Some(Silence {
        after: Duration::from_secs(16),
        probes: 2,
    });
    let quiet = |last_ack_ms, data_ms| TcpInfo {
        last_data_sent_ms: data_ms,
        last_data_recv_ms: data_ms,
        ..info(0, last_ack_ms, 0)
    };
    let busy = quiet(300, 300);
    assert_eq!(
        at_request(&busy, STALL, t),
        Some(Verdict::Healthy),
        "1 s heartbeat"
    );
    assert_eq!(
        at_request(&quiet(1_500, 60_000), STALL, t),
        Some(Verdict::Idle),
        "idle, keepalive probes answered"
    );
    assert_eq!(
        at_request(&quiet(60_000, 60_000), STALL, t),
        Some(Verdict::Idle)
    );
    let sending = TcpInfo {
        last_data_sent_ms: 2,
        last_data_recv_ms: 50_000,
        ..info(4, 20, 0)
    };
    assert_eq!(
        at_request(&sending, STALL, t),
        Some(Verdict::Healthy),
        "upload"
    );
    let holed = info(1, 12_000, 5);
    assert_eq!(at_request(&holed, STALL, t), Some(Verdict::Stalled));
    let young = info(1, 3_000, 2);
    assert_eq!(at_request(&young, STALL, t), Some(Verdict::Suspect));
    let closing = TcpInfo { state: 4, ..holed };
    assert_eq!(at_request(&closing, STALL, t), None, "FIN-WAIT-1");
}
