//! The order of the sources (`lookup`), with DNS stood in for by a closure that counts its
//! calls: DNS itself is tested against the lab's dnsmasq (`tests/tests/lab/endpoint_resolution.rs`).

use std::{cell::Cell, path::PathBuf};

use super::*;

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// A hosts file pinning `api.lab.test` to 198.51.100.2, in a fresh directory.
fn hosts_file(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lifeline-resolve-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hosts");
    std::fs::write(&path, "# pinned\n198.51.100.2 api.lab.test\n").unwrap();
    path
}

/// What `lookup` gives for `name` in `order`, and how often it asked DNS, which answers
/// `dns` (203.0.113.7) or fails.
fn run(
    order: &[NssSource],
    hosts: &Path,
    name: &str,
    dns: &Result<(), DnsError>,
) -> (Result<Answer, DnsError>, u32) {
    let calls = Cell::new(0);
    let answer = |_: &str| {
        calls.set(calls.get() + 1);
        let r = dns.clone().map(|()| Answer {
            addrs: BTreeSet::from(["203.0.113.7".parse().unwrap()]),
            ttl: Duration::from_secs(5),
            from: ResolvedBy::Dns,
        });
        async move { r }
    };
    let got = block(lookup(order, hosts, name, answer));
    (got, calls.get())
}

#[test]
fn files_dns_answers_from_the_hosts_file_without_asking_dns() {
    use NssSource::{Dns, Files};
    let hosts = hosts_file("files-dns");
    let (got, calls) = run(&[Files, Dns], &hosts, "API.lab.test", &Ok(()));
    let got = got.unwrap();
    assert_eq!((got.from, calls), (ResolvedBy::Hosts, 0));
    assert_eq!(got.addrs, BTreeSet::from(["198.51.100.2".parse().unwrap()]));
    assert_eq!(got.ttl, hosts::HOSTS_REFRESH);
    // A name not in the file falls through to DNS.
    let (got, calls) = run(&[Files, Dns], &hosts, "other.lab.test", &Ok(()));
    assert_eq!((got.unwrap().from, calls), (ResolvedBy::Dns, 1));
    std::fs::remove_dir_all(hosts.parent().unwrap()).unwrap();
}

#[test]
fn dns_files_asks_dns_first_and_a_failure_goes_on_to_the_file() {
    use NssSource::{Dns, Files};
    let hosts = hosts_file("dns-files");
    let (got, calls) = run(&[Dns, Files], &hosts, "api.lab.test", &Ok(()));
    assert_eq!((got.unwrap().from, calls), (ResolvedBy::Dns, 1));
    let (got, calls) = run(
        &[Dns, Files],
        &hosts,
        "api.lab.test",
        &Err(DnsError::Timeout),
    );
    assert_eq!((got.unwrap().from, calls), (ResolvedBy::Hosts, 1));
    // Known to neither: the DNS error, which callers treat as uncertain.
    let (got, _) = run(
        &[Dns, Files],
        &hosts,
        "x.lab.test",
        &Err(DnsError::ServFail),
    );
    assert_eq!(got, Err(DnsError::ServFail));
    let (got, calls) = run(&[Files], &hosts, "x.lab.test", &Ok(()));
    assert_eq!(
        (got, calls),
        (Err(DnsError::NotInHosts(hosts.display().to_string())), 0)
    );
    std::fs::remove_dir_all(hosts.parent().unwrap()).unwrap();
}

#[test]
fn an_unreadable_hosts_file_is_an_error_before_dns() {
    use NssSource::{Dns, Files};
    let (got, calls) = run(&[Files, Dns], Path::new("/"), "api.lab.test", &Ok(()));
    assert!(matches!(got, Err(DnsError::Hosts(_))), "{got:?}");
    assert_eq!(
        calls, 0,
        "DNS must not stand in for a file that may pin the name"
    );
    // A missing file is an empty one: on to DNS.
    let (got, calls) = run(
        &[Files, Dns],
        Path::new("/nonexistent/hosts"),
        "api.lab.test",
        &Ok(()),
    );
    assert_eq!((got.unwrap().from, calls), (ResolvedBy::Dns, 1));
}
