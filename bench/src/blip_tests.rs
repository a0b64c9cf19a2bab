//! How a blip trial's events become its numbers.

use lifeline_tests::fixtures::client::ClientEvent;
use serde_json::{Value, json};

use super::{own_close, served_again};

fn ev(raw: Value) -> ClientEvent {
    let num = |k: &str| raw.get(k).and_then(Value::as_u64);
    ClientEvent {
        mono_ms: num("mono_ms").unwrap_or(0),
        event: raw["event"].as_str().unwrap_or_default().to_owned(),
        errno: num("errno").and_then(|n| i32::try_from(n).ok()),
        error: raw.get("error").and_then(Value::as_str).map(str::to_owned),
        local_port: num("local_port").and_then(|n| u16::try_from(n).ok()),
        raw,
    }
}

fn connected(ms: u64, port: u16) -> ClientEvent {
    ev(
        json!({"event": "connected", "mono_ms": ms, "local_port": port, "peer": "198.51.100.2:6443"}),
    )
}

fn ok(ms: u64, port: u16) -> ClientEvent {
    ev(json!({"event": "ok", "mono_ms": ms, "local_port": port}))
}

#[test]
fn the_original_connection_is_served_again_only_once_the_heal_began() {
    // Blip from 10,000 to 13,000 ms: an answer stamped just after the rule went in was on
    // its way before it; the first answer after the heal is the one that counts.
    let events = [
        connected(1_000, 40_000),
        ok(10_001, 40_000),
        ok(14_200, 40_000),
    ];
    assert_eq!(served_again(&events, 10_000, 13_000), Some(4_200));
    assert_eq!(served_again(&events[..2], 10_000, 13_000), None);
}

#[test]
fn a_new_connection_is_served_again_during_the_blip() {
    // One address of two: a client moved to the live one is served while the blip lasts.
    let events = [
        connected(1_000, 40_000),
        connected(12_000, 40_001),
        ok(12_010, 40_001),
    ];
    assert_eq!(served_again(&events, 10_000, 13_000), Some(2_010));
}

#[test]
fn own_closes_are_failed_sessions_other_than_lifelines_kill() {
    let timeout = ev(json!({"event": "error", "op": "read", "errno": libc::ETIMEDOUT}));
    let ping = ev(json!({"event": "error", "op": "read", "error": "keep-alive timed out"}));
    let eof = ev(json!({"event": "eof"}));
    let killed = ev(json!({"event": "error", "op": "read", "errno": libc::ECONNABORTED}));
    let dial = ev(json!({"event": "error", "op": "connect", "error": "connect timed out"}));
    let resolve = ev(json!({"event": "error", "op": "resolve", "error": "no answer"}));
    for e in [&timeout, &ping, &eof] {
        assert!(own_close(e), "{:?}", e.raw);
    }
    for e in [&killed, &dial, &resolve, &ok(1, 2)] {
        assert!(!own_close(e), "{:?}", e.raw);
    }
}
