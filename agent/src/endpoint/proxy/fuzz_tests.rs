//! The three parsers fuzzed (issue 34): random text built from each grammar's own
//! characters and words, and well-formed configurations with random upstreams whose answer
//! is known. No input may panic, hang or pass a bound unnoticed; a well-formed one gives
//! exactly its upstreams. proptest runs a fixed number of cases (`CASES`), so `cargo test`
//! (and CI) spends a bounded time here: about two seconds in all on the lab machine.

use std::net::Ipv4Addr;

use proptest::prelude::*;

use super::{files::Root, haproxy, k3s, nginx};

const CASES: u32 = 400;

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Text from nginx's and haproxy's own characters and words, so random input reaches deep
/// into the grammar instead of stopping at the first byte.
fn soup() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(";".to_owned()),
        Just(" ".to_owned()),
        Just("\n".to_owned()),
        Just("#".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just("stream".to_owned()),
        Just("server".to_owned()),
        Just("upstream u".to_owned()),
        Just("listen 6443".to_owned()),
        Just("proxy_pass u".to_owned()),
        Just("include x".to_owned()),
        Just("frontend f".to_owned()),
        Just("backend u".to_owned()),
        Just("bind :6443".to_owned()),
        Just("default_backend u".to_owned()),
        Just("server s 198.51.100.2:6443".to_owned()),
        prop::collection::vec(32u8..127, 0..12)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..200).prop_map(|v| v.concat())
}

fn ups() -> impl Strategy<Value = Vec<(Ipv4Addr, u16)>> {
    prop::collection::vec((any::<[u8; 4]>().prop_map(Ipv4Addr::from), 1u16..), 1..6)
}

fn listed(v: &[(Ipv4Addr, u16)]) -> Vec<(String, u16)> {
    let mut out: Vec<(String, u16)> = v.iter().map(|(a, p)| (a.to_string(), *p)).collect();
    out.dedup();
    out
}

fn empty_root() -> Root {
    Root::at(&std::env::temp_dir()).unwrap()
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn nginx_any_text(text in soup()) {
        let _ = nginx::of_text(&empty_root(), &text, 6443);
    }

    #[test]
    fn nginx_nested_blocks(depth in 0usize..80, ups in ups()) {
        let servers: String = ups.iter().fold(String::new(), |s, (a, p)| s + &format!("server {a}:{p};"));
        let text = format!(
            "{}stream {{ upstream u {{ {servers} }} server {{ listen 6443; proxy_pass u; }} }}{}",
            "x {".repeat(depth),
            "}".repeat(depth)
        );
        let got = nginx::of_text(&empty_root(), &text, 6443);
        if depth == 0 {
            prop_assert_eq!(got.unwrap(), listed(&ups));
        } else if depth + 2 > nginx::MAX_DEPTH {
            prop_assert!(got.is_err());
        } else {
            // A stream block nested in another is not nginx's top-level `stream`.
            prop_assert_eq!(got.unwrap(), vec![]);
        }
    }

    #[test]
    fn haproxy_any_text(text in soup()) {
        let _ = haproxy::of_text(&text, 6443);
    }

    #[test]
    fn haproxy_backends(ups in ups(), noise in soup()) {
        let servers: String = ups
            .iter()
            .enumerate()
            .fold(String::new(), |s, (i, (a, p))| s + &format!("  server s{i} {a}:{p} check\n"));
        let text = format!("frontend f\n  bind 127.0.0.1:6443\n  default_backend b\n\nbackend b\n{servers}\n");
        prop_assert_eq!(haproxy::of_text(&text, 6443).unwrap(), listed(&ups));
        let _ = haproxy::of_text(&format!("{noise}\n{text}"), 6443);
    }

    #[test]
    fn k3s_any_text(text in soup(), ups in ups()) {
        let _ = k3s::parse(&text);
        let list: Vec<String> = ups.iter().map(|(a, p)| format!("\"{a}:{p}\"")).collect();
        let json = format!(
            "{{\"ServerURL\":\"https://a:6443\",\"ServerAddresses\":[{}],\"Listener\":{{}}}}",
            list.join(",")
        );
        prop_assert_eq!(k3s::parse(&json).unwrap(), ups.iter().map(|(a, p)| (a.to_string(), *p)).collect::<Vec<_>>());
    }

    #[test]
    fn k3s_deep_json(depth in 0usize..400) {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        prop_assert!(k3s::parse(&text).is_none());
    }
}
