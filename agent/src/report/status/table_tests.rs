//! The table from rows read back as the client reads them: addresses keep the column widths
//! their text had, and the peers no answer held are listed in text order.

use super::*;

/// A row as the daemon writes it, on `peer`, outside the endpoint's connections.
fn outside(cookie: u64, peer: &str) -> String {
    format!(
        r#"{{"cookie":{cookie},"local":"198.51.100.2:40000","peer":"{peer}","state":"ESTABLISHED","owner_pid":812,"owner_comm":"kubelet","established_age_ms":5000,"last_ack_age_ms":1234,"unacked_segs":0,"unacked_bytes":0,"retransmits":0,"rto_count":0,"bytes_acked":10,"bytes_received":20,"verdict":"healthy","keepalive":"2s,1s,20","endpoint":"api:6443","endpoint_member":"never-held","endpoint_socket":false,"source":"sock_ops","watched_by":["cgroup"]}}"#
    )
}

fn snapshot(rows: &[String]) -> Snapshot {
    let json = format!(
        r#"{{"stall_timeout_ms":10000,"silent_timeout_ms":null,"kills":0,"holds":0,"endpoint_source":null,"endpoints":[],"sockets_full":0,"sockets":[{}]}}"#,
        rows.join(",")
    );
    serde_json::from_str(&json).unwrap()
}

#[test]
fn addresses_fill_their_columns_as_their_text_did() {
    let s = snapshot(&[
        outside(1, "203.0.113.7:6443"),
        outside(2, "[2001:db8::7]:6443"),
    ]);
    let table = render(&s);
    for peer in ["203.0.113.7:6443", "[2001:db8::7]:6443"] {
        let columns = format!(
            "healthy  ESTABLISHED {peer:<28} {:<28} kubelet/812 ",
            "198.51.100.2:40000"
        );
        assert!(table.contains(&columns), "{columns:?} in\n{table}");
    }
    assert!(table.contains(" 1.2s "), "LAST-ACK in\n{table}");
    assert!(table.contains(" sock_ops outside   2s,1s,20\n"), "{table}");
}

#[test]
fn never_held_peers_are_listed_in_text_order() {
    // As addresses, .9 comes before .10; as text (what the note has always sorted), after.
    let s = snapshot(&[
        outside(1, "203.0.113.9:6443"),
        outside(2, "203.0.113.10:6443"),
    ]);
    let table = render(&s);
    assert!(
        table.contains("outside: 2 socket(s) on api:6443's port are not its connections, judged by stall and silence only, never by DNS; addresses its answers never held: 203.0.113.10:6443, 203.0.113.9:6443\n"),
        "{table}"
    );
}

#[test]
fn the_owner_column_says_what_became_of_the_owner() {
    let with = |state: &str| {
        outside(1, "203.0.113.7:6443").replace(
            r#""established_age_ms""#,
            &format!(r#""owner_state":"{state}","established_age_ms""#),
        )
    };
    let table = render(&snapshot(&[with("exited"), with("no owner")]));
    assert!(
        table.contains(&format!(" {:<20} ", "kubelet/812 exited")),
        "{table}"
    );
    assert!(table.contains(&format!(" {:<20} ", "no owner")), "{table}");
    let unknown = serde_json::from_str::<Snapshot>(&format!(
        r#"{{"stall_timeout_ms":1,"silent_timeout_ms":null,"kills":0,"holds":0,"endpoint_source":null,"endpoints":[],"sockets_full":0,"sockets":[{}]}}"#,
        with("asleep")
    ));
    assert!(unknown.is_err(), "an owner state this agent does not know");
}

#[test]
fn losses_are_warnings_and_skipped_connects_a_plain_line() {
    let mut s = snapshot(&[]);
    assert!(!render(&s).contains("WARNING"), "{}", render(&s));
    s.capacity.owners_skipped = 250_000;
    s.capacity.endpoint_quota_full = 2;
    s.capacity.inbox_dropped = 7;
    let table = render(&s);
    assert!(
        table.contains("\nskipped connects: 250000 to watched ports recorded nothing"),
        "{table}"
    );
    let warnings: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("WARNING: "))
        .collect();
    assert_eq!(warnings.len(), 2, "{table}");
    assert!(
        warnings[1].contains("0 in the kernel's ring buffer, 7 past"),
        "{table}"
    );
}

#[test]
fn the_fast_probes_line_names_a_hidden_device() {
    let mut s = snapshot(&[]);
    assert!(
        render(&s).contains("\nfast probes: off (--fast-probes off)\n"),
        "an older daemon's answer without the field reads as off"
    );
    s.fast_probes = serde_json::from_str(
        r#"{"state":"hidden","devices":[{"device":"eth0","chain":{"kind":"tcx"},"reach":"hidden","seen":0,"sent":9}]}"#,
    )
    .unwrap();
    let table = render(&s);
    assert!(
        table.contains("\nfast probes hidden by another program on eth0 (tcx, first: the program saw none of the 9 packets eth0 sent;"),
        "{table}"
    );
}
